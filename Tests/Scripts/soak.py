#!/usr/bin/env python3
"""Soak run of baton agents on the simulated radio with HCI faults (issue 16).

Two rounds, one with two agents and one with three, each for half the
duration: every agent saves notes at random (each note is only ever edited
by one agent, so any conflict copy is spurious), agents are killed with
SIGKILL at random and restarted at once (on a fresh controller of the same
radio, as a real controller would be reset), and the radio injects faults
into a share of the HCI packets. Then saves, kills and faults stop, and the
script waits until every agent holds every note's last version.

Prints per round and in total: notes saved, notes delivered (note copies on
peers holding the last version, of those due), the slowest delivery after
the faults stopped (the time until the last peer held the last version of
every note), spurious conflict copies, notes seen with content that was never
saved (partial or corrupted), and crashes (agents that exited by themselves).

Usage: soak.py --baton PATH --python PATH --radio PATH [--seconds N]
       [--faults RULES] [--seed N] [--settle N] [--keep]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DEFAULT_FAULTS = ("drop type=acl p=0.03; corrupt type=acl p=0.01; duplicate type=acl p=0.005; "
                  "delay type=acl p=0.005 ms=50; drop event=0x13 p=0.05")


def say(*words):
    print(" ".join(str(w) for w in words), flush=True)


class Agent:
    def __init__(self, soak, index):
        self.soak = soak
        self.name = f"agent{chr(65 + index)}"
        self.home = os.path.join(soak.base, self.name)
        self.notes = os.path.join(self.home, "notes")
        self.state = os.path.join(self.home, "state")
        self.run = os.path.join(self.home, "run")
        for d in (self.notes, self.state, self.run):
            os.makedirs(d, exist_ok=True)
        os.chmod(self.run, 0o700)
        self.log = os.path.join(self.home, "agent.log")
        self.process = None
        self.starts = 0
        self.crashes = []
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.run,
                        XDG_CONFIG_HOME=os.path.join(self.home, "config"))

    def start(self):
        controller = self.soak.next_controller()
        with open(self.log, "a") as log:
            log.write(f"=== start {time.strftime('%H:%M:%S')} on controller port {controller}\n")
            self.process = subprocess.Popen(
                [self.soak.baton, "agent", "--notes", self.notes, "--controller",
                 f"tcp:127.0.0.1:{controller}", "--key-file", self.soak.key, "--name", self.name,
                 "--state-dir", self.state, "-v"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env)
        self.starts += 1

    def check(self):
        """Records an exit the soak did not cause."""
        if self.process and self.process.poll() is not None:
            self.crashes.append(self.process.returncode)
            say(f"  CRASH {self.name} exited {self.process.returncode} on its own")
            self.process = None
            self.start()

    def kill(self):
        if self.process:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None

    def stop(self):
        if self.process:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.returncode not in (0, -signal.SIGTERM):
                self.crashes.append(self.process.returncode)
            self.process = None

    def save(self, name, text):
        path = os.path.join(self.notes, name)
        temporary = os.path.join(self.notes, f".{name}.tmp")
        with open(temporary, "w") as f:
            f.write(text)
        os.rename(temporary, path)

    def files(self):
        out = {}
        for entry in os.scandir(self.notes):
            if entry.is_file() and not entry.name.startswith("."):
                try:
                    with open(entry.path, "rb") as f:
                        out[entry.name] = f.read()
                except OSError:
                    pass
        return out


class Soak:
    def __init__(self, args, agents, seconds, base):
        self.args = args
        self.baton = args.baton
        self.base = base
        self.count = agents
        self.seconds = seconds
        self.rng = random.Random(args.seed * 100 + agents)
        self.key = os.path.join(base, "group.key")
        subprocess.run([self.baton, "keygen"], stdout=open(self.key, "w"), check=True)
        os.chmod(self.key, 0o600)
        # One controller per agent start: a killed agent comes back on a fresh one.
        controllers = agents + 2 + int(seconds / args.kill_every) + 4
        fault_log = os.path.join(base, "faults.log")
        self.radio = subprocess.Popen(
            [args.python, args.radio, "--controllers", str(controllers), "--faults", args.faults,
             "--fault-seed", str(args.seed), "--fault-log", fault_log],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(
                os.path.join(base, "radio.log"), "w"), text=True)
        line = self.radio.stdout.readline().split()
        if not line or line[0] != "READY":
            raise SystemExit(f"the simulated radio did not start: {line}")
        self.ports = [int(p) for p in line[1:]]
        self.fault_log = fault_log
        self.agents = [Agent(self, i) for i in range(agents)]
        # Every version ever saved of each note, and the last one.
        self.versions = {}
        self.last = {}
        self.saves = 0
        self.kills = 0

    def next_controller(self):
        if not self.ports:
            raise SystemExit("out of simulated controllers")
        return self.ports.pop(0)

    def save_one(self):
        agent = self.rng.choice(self.agents)
        name = f"{agent.name}-{self.rng.randrange(self.args.notes)}.md"
        edit = len(self.versions.get(name, ()))
        size = self.rng.choice([60, 200, 400, 800, 1500])
        text = f"# {name} edit {edit}\n" + "".join(
            self.rng.choice("abcdefghij \n") for _ in range(size))
        agent.save(name, text)
        data = text.encode()
        self.versions.setdefault(name, set()).add(data)
        self.last[name] = data
        self.saves += 1

    def faults(self, on):
        self.radio.send_signal(signal.SIGUSR2 if on else signal.SIGUSR1)

    def run(self):
        say(f"round: {self.count} agents, {self.seconds:.0f} s of saves, kills and faults "
            f"({self.args.faults})")
        for agent in self.agents:
            agent.start()
        time.sleep(2)
        end = time.monotonic() + self.seconds
        next_kill = time.monotonic() + self.rng.uniform(0.5, 1.5) * self.args.kill_every
        while time.monotonic() < end:
            self.save_one()
            for agent in self.agents:
                agent.check()
            if time.monotonic() >= next_kill:
                victim = self.rng.choice(self.agents)
                victim.kill()
                self.kills += 1
                victim.start()
                next_kill = time.monotonic() + self.rng.uniform(0.5, 1.5) * self.args.kill_every
            time.sleep(self.rng.uniform(0.2, 2 * self.args.save_every))
        self.faults(False)
        faults_off = time.monotonic()
        deadline = faults_off + self.args.settle
        first_complete = {}
        while True:
            for agent in self.agents:
                agent.check()
            now = time.monotonic()
            pending = 0
            for name, data in self.last.items():
                holders = sum(1 for a in self.agents if a.files().get(name) == data)
                if holders == len(self.agents):
                    first_complete.setdefault(name, now - faults_off)
                else:
                    first_complete.pop(name, None)
                    pending += 1
            if pending == 0 or now > deadline:
                break
            time.sleep(0.5)
        converged = pending == 0
        slowest = max(first_complete.values(), default=0.0) if converged else None
        return self.report(converged, slowest, pending)

    def report(self, converged, slowest, pending):
        due = len(self.last) * (len(self.agents) - 1)
        delivered = 0
        conflicts = 0
        foreign = 0
        for agent in self.agents:
            files = agent.files()
            for name, data in files.items():
                if ".conflict-" in name:
                    conflicts += 1
                elif name in self.versions and data not in self.versions[name]:
                    foreign += 1
            for name, data in self.last.items():
                if not name.startswith(agent.name + "-") and files.get(name) == data:
                    delivered += 1
        crashes = sum(len(a.crashes) for a in self.agents)
        for agent in self.agents:
            agent.stop()
        crashes = sum(len(a.crashes) for a in self.agents)
        self.radio.send_signal(signal.SIGTERM)
        self.radio.wait()
        injected = 0
        summary = ""
        with open(self.fault_log) as f:
            for line in f:
                if " summary: " in line:
                    summary = line.split(" summary: ", 1)[1].strip()
                elif " faults o" not in line and " refused " not in line:
                    injected += 1
        figures = {
            "agents": self.count, "seconds": round(self.seconds), "saves": self.saves,
            "notes": len(self.last), "delivered": delivered, "due": due,
            "converged": converged, "pending": pending,
            "slowest_after_faults_s": None if slowest is None else round(slowest, 1),
            "spurious_conflict_copies": conflicts, "unsaved_content": foreign,
            "crashes": crashes, "kills": self.kills, "faults_injected": injected,
        }
        say(f"  notes saved: {self.saves} saves of {len(self.last)} notes; kills: {self.kills}; "
            f"faults injected: {injected}")
        say(f"  notes delivered: {delivered} of {due} note copies due on peers"
            + ("" if converged else f" ({pending} notes still missing somewhere after "
               f"{self.args.settle} s)"))
        say(f"  slowest delivery after the faults stopped: "
            + (f"{slowest:.1f} s" if slowest is not None else f"not within {self.args.settle} s"))
        say(f"  spurious conflict copies: {conflicts}; notes with content never saved: {foreign}; "
            f"crashes: {crashes}")
        if summary:
            say(f"  fault rules: {summary}")
        return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baton", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--radio", required=True)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--faults", default=DEFAULT_FAULTS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle", type=float, default=180,
                        help="the longest wait for convergence after the faults stop")
    parser.add_argument("--notes", type=int, default=12, help="notes per agent")
    parser.add_argument("--save-every", type=float, default=1.0)
    parser.add_argument("--kill-every", type=float, default=15.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="baton-soak-")
    say(f"soak: {args.seconds:.0f} s in {base}")
    # A copy of the binary, so that a rebuild meanwhile does not change it.
    shutil.copy2(args.baton, os.path.join(base, "baton"))
    args.baton = os.path.join(base, "baton")

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    results = []
    current = None
    try:
        for count in (2, 3):
            round_base = os.path.join(base, f"{count}-agents")
            os.makedirs(round_base)
            current = Soak(args, count, args.seconds / 2, round_base)
            results.append(current.run())
            current = None
    except KeyboardInterrupt:
        if current:
            for agent in current.agents:
                agent.kill()
            current.radio.kill()
        raise SystemExit("soak: interrupted")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    total = {k: sum(r[k] for r in results) for k in (
        "saves", "notes", "delivered", "due", "spurious_conflict_copies", "unsaved_content",
        "crashes", "kills", "faults_injected")}
    slowest = [r["slowest_after_faults_s"] for r in results]
    say(f"total: {total['saves']} saves, {total['delivered']} of {total['due']} deliveries, "
        f"slowest after faults "
        + ("; ".join(f"{s} s" if s is not None else "NOT CONVERGED" for s in slowest))
        + f", {total['spurious_conflict_copies']} spurious conflict copies, "
        f"{total['unsaved_content']} corrupted notes, {total['crashes']} crashes, "
        f"{total['kills']} kills, {total['faults_injected']} faults")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    ok = all(r["converged"] for r in results) and total["crashes"] == 0 \
        and total["spurious_conflict_copies"] == 0 and total["unsaved_content"] == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
