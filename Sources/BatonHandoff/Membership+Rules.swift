/// The rules of PROTOCOL.md section 13.2: what a set of records adds up to.
/// A function of the set alone (records sorted by digest, no clocks).
extension Membership {
  mutating func evaluate() {
    var st = State()
    var founds: [MembershipRecord] = []
    var adds: [UInt32: [MembershipRecord]] = [:]
    var removes: [UInt32: [MembershipRecord]] = [:]
    var rekeys: [UInt32: [MembershipRecord]] = [:]
    var digests: [MembershipRecord: [UInt8]] = [:]
    for (digest, record) in records.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
      digests[record] = digest
      guard let ok = verified(record, digest: digest) else {
        st.status[digest] = .waiting(.signerUnknown(record.signer))
        continue
      }
      guard ok else { continue }
      switch record.body {
      case .found: founds.append(record)
      case .add(_, _, _, let epoch, _): adds[epoch, default: []].append(record)
      case .remove(_, _, let epoch, _): removes[epoch, default: []].append(record)
      case .rekey(let epoch, _, _):
        rekeys[epoch, default: []].append(record)
      }
    }
    func digest(_ r: MembershipRecord) -> [UInt8] { digests[r] ?? r.digest }
    func subject(_ r: MembershipRecord) -> DeviceID {
      switch r.body {
      case .found(let key, _, _), .add(let key, _, _, _, _): key.deviceID
      case .remove(let id, _, _, _): id
      case .rekey(_, let signer, _): signer
      }
    }
    func listed(_ r: MembershipRecord) -> [DeviceID] {
      if case .rekey(_, _, let secrets) = r.body { return secrets.map(\.device) }
      return []
    }
    /// `start` and the devices `epochAdds` bring in, transitively, skipping
    /// sponsors and subjects in `excluded`; at most maxMembers.
    func closure(
      _ start: Set<DeviceID>, _ epochAdds: [MembershipRecord], excluding: Set<DeviceID>,
      sponsorsExcluded: Set<DeviceID>
    ) -> (members: Set<DeviceID>, applied: [MembershipRecord]) {
      var set = start.subtracting(excluding)
      var applied: [MembershipRecord] = []
      var done = Set<Int>()
      var changed = true
      while changed {
        changed = false
        for (index, add) in epochAdds.enumerated() where !done.contains(index) {
          let who = subject(add)
          guard set.contains(add.signer), !excluding.contains(add.signer),
            !sponsorsExcluded.contains(add.signer), !excluding.contains(who)
          else { continue }
          guard set.contains(who) || set.count < MembershipRecord.maxMembers else { continue }
          set.insert(who)
          applied.append(add)
          done.insert(index)
          changed = true
        }
      }
      return (set, applied)
    }

    // Foundings count only while no rekey to epoch 1 exists, except those
    // of devices that epoch's rekey lists or that signed it (the founders it
    // moved on). A removed device's additions never count, and its rekeys
    // lose to any whose signer is not removed (so that it cannot fork an
    // epoch it once belonged to). Both depend on the outcome, so the chain is
    // worked out again from the previous pass's winner of epoch 1 and removed
    // devices until they stop changing (at most four passes; the result is a
    // function of the set either way).
    var allFounders = Set<DeviceID>()
    for found in founds where allFounders.count < MembershipRecord.maxMembers {
      allFounders.insert(subject(found))
    }
    let before = st
    var lateFounds = Set<[UInt8]>()
    var founders = allFounders
    var current: UInt32 = 0
    var appliedAdds = Set<[UInt8]>()
    var appliedRemovals = Set<[UInt8]>()
    // The first pass takes every device some removal names as removed (a
    // removal wins: a rival rekey must not get to undo the removal that
    // excludes its signer), the next ones the devices actually removed.
    var removedEver = Set(removes.values.joined().map(subject))
    for pass in 0..<4 {
      if pass > 0 {
        var nextFounders = allFounders
        var nextLate = Set<[UInt8]>()
        if let first = st.winners[1] {
          let named = Set(listed(first) + [first.signer])
          nextFounders = allFounders.intersection(named)
          for found in founds where !named.contains(subject(found)) {
            nextLate.insert(digest(found))
          }
        }
        let nextRemoved = Set(st.removed.keys)
        guard nextFounders != founders || nextRemoved != removedEver else { break }
        founders = nextFounders
        lateFounds = nextLate
        removedEver = nextRemoved
        st = before
      }
      var base = founders
      var currentMembers = Set<DeviceID>()
      current = 0
      appliedAdds = []
      appliedRemovals = []
      while true {
        let removedBefore = Set(st.removed.filter { $0.value.epoch < current }.keys)
        let epochAdds = adds[current] ?? []
        let early = closure(
          base, epochAdds, excluding: removedBefore, sponsorsExcluded: removedEver)
        for removal in removes[current] ?? [] where early.members.contains(removal.signer) {
          appliedRemovals.insert(digest(removal))
          let who = subject(removal)
          if st.removed[who] == nil {
            st.removed[who] = Removal(by: removal.signer, epoch: current, digest: digest(removal))
          }
        }
        let removedNow = Set(st.removed.filter { $0.value.epoch <= current }.keys)
        let settled = closure(
          base, epochAdds, excluding: removedNow, sponsorsExcluded: removedEver)
        for add in settled.applied {
          appliedAdds.insert(digest(add))
          let who = subject(add)
          if st.joinedBy[who] == nil { st.joinedBy[who] = add }
        }
        if current == 0 {
          for found in founds where founders.contains(subject(found)) {
            let who = subject(found)
            if st.joinedBy[who]?.kind != .found { st.joinedBy[who] = found }
          }
        }
        st.holders = base.union(early.members)
        st.listed = base
        currentMembers = settled.members
        let next = current &+ 1
        let candidates =
          current == UInt32.max
          ? [] : (rekeys[next] ?? []).filter { settled.members.contains($0.signer) }
        guard
          let winner = candidates.min(by: { a, b in
            let (ra, rb) = (removedEver.contains(a.signer), removedEver.contains(b.signer))
            return ra != rb ? !ra : digest(a).lexicographicallyPrecedes(digest(b))
          })
        else { break }
        st.winners[next] = winner
        st.status[digest(winner)] = .effective
        for other in candidates where other != winner {
          st.status[digest(other)] = .ignored(.superseded(epoch: next))
        }
        base = Set(listed(winner))
        current = next
      }
      st.epoch = current
      st.members = currentMembers.subtracting(st.removed.keys)
    }

    for (digest, record) in records where st.status[digest] == nil {
      guard verified(record, digest: digest) == true else { continue }
      switch record.body {
      case .found:
        let who = subject(record)
        if let removal = st.removed[who] {
          st.status[digest] = .ignored(.readdAfterRemoval(who, by: removal.by))
        } else if lateFounds.contains(digest) {
          st.status[digest] = .ignored(.foundedAfterRekey(who))
        } else {
          st.status[digest] = .effective
        }
      case .add(_, _, let sponsor, let epoch, _):
        let who = subject(record)
        if appliedAdds.contains(digest) {
          st.status[digest] = .effective
        } else if let removal = st.removed[who] {
          st.status[digest] =
            sponsor == who
            ? .ignored(.readdAfterRemoval(who, by: removal.by))
            : .ignored(.subjectRemoved(who, by: removal.by))
        } else if let removal = st.removed[sponsor] {
          st.status[digest] = .ignored(.signerRemoved(sponsor, by: removal.by))
        } else if epoch > current {
          st.status[digest] = .waiting(.unknownEpoch(epoch, current: current))
        } else if epoch == current && st.members.count >= MembershipRecord.maxMembers {
          st.status[digest] = .ignored(.groupFull(epoch: epoch))
        } else {
          st.status[digest] = .waiting(.signerNotMember(sponsor, epoch: epoch))
        }
      case .remove(_, let signer, let epoch, _):
        if appliedRemovals.contains(digest) {
          st.status[digest] = .effective
        } else if let removal = st.removed[signer] {
          st.status[digest] = .ignored(.signerRemoved(signer, by: removal.by))
        } else if epoch > current {
          st.status[digest] = .waiting(.unknownEpoch(epoch, current: current))
        } else {
          st.status[digest] = .waiting(.signerNotMember(signer, epoch: epoch))
        }
      case .rekey(let epoch, let signer, _):
        let previous = epoch &- 1
        if let removal = st.removed[signer] {
          st.status[digest] = .ignored(.signerRemoved(signer, by: removal.by))
        } else if previous > current {
          st.status[digest] = .waiting(.unknownEpoch(previous, current: current))
        } else {
          st.status[digest] = .waiting(.signerNotMember(signer, epoch: previous))
        }
      }
    }
    state = st
    for winner in st.winners.values where secretCache[winner.digest] == nil {
      guard case .rekey(_, _, let secrets) = winner.body,
        let mine = secrets.first(where: { $0.device == device.deviceID }),
        let secret = device.openSealed(mine.sealed), secret.count == MembershipRecord.secretBytes
      else { continue }
      secretCache[winner.digest] = secret
    }
  }
}
