import BatonHandoff

/// Builds the agent core that `baton agent` runs: the handoff agent
/// (`HandoffAgent`), which joins the notes folders, the handoff engine and
/// the BLE host. `hciLog`, when given, overrides the configuration's.
public func makeAgentCore(configuration: AgentConfiguration, key: GroupKey?, hciLog: String?)
  throws -> any AgentCore
{
  var configuration = configuration
  if let hciLog { configuration.hciLog = hciLog }
  return HandoffAgent(configuration: configuration, key: key)
}
