"""A clock for the simulated radio (radio.py --timing timed): ACL data
between two connected controllers crosses at connection events, in PDUs
that take air time, instead of at once.

The model, for each LE connection:

- Connection events. The connection is created one connection interval
  after the central's controller hears the advertiser it was asked to
  connect to (so it starts at one of the target's advertising events, plus
  one interval): only then does CONNECT_IND go out and both hosts get their
  LE Connection Complete. That instant is the anchor: connection events
  start at anchor + k * interval, k = 0, 1, 2, ... (until an update).
- Connection updates. A host's LE Connection Update gets the link's
  configured interval when its range holds it, else the range's top (what
  bumble gives). The new interval applies from the instant: the first
  event 6 events after the one under way when LL_CONNECTION_UPDATE_IND
  goes out (Core 6.0, Vol 6, Part B, 5.1.1). Events keep their numbers;
  those before the instant keep the old interval. What the controllers
  still hold queued is placed again from then on, in order, at the pace
  the events will have (a packet whose first PDUs already went is placed
  whole again). `ConnectionSchedule.update` alone, without that, puts the
  instant after every event that already carries a PDU.
- PDUs. An L2CAP packet (bumble's controller reassembles the host's ACL
  fragments into one) is cut into PDUs of at most `data_length` payload
  bytes. A PDU of p payload bytes takes (p + 14) * 8 us on the 1M PHY
  (preamble, access address, header, CRC and MIC: 14 bytes at 1 bit/us),
  half that on 2M, and consecutive PDUs of an event are 150 us apart (T_IFS).
- Events. An event carries at most `pdus_per_event` PDUs in each direction,
  and every PDU must end by the start of the next event. The first PDU of an
  event starts at the event's anchor; each further one 150 us after the end
  of the one before, whichever direction it goes, in the order the two
  controllers had them ready. A PDU ready after its event's anchor joins
  that event only while the event is still running (it is ready no later
  than the previous PDU's end plus T_IFS); otherwise it waits for the next.
- Delivery. A packet reaches the peer's host at the end of the PDU that
  carries its last byte. Each direction keeps its order: a PDU never goes in
  an earlier event than the one before it in the same direction.
- Advertising. A legacy advertiser's events are its interval apart in
  0.625 ms units, as on a real radio (bumble's own advertiser reads the
  units as milliseconds), plus advDelay, a fresh random 0 to 10 ms each
  time (Core 6.0, Vol 6, Part B, 4.4.2.2.1). Extended advertising keeps
  bumble's timing (the right units, no advDelay).
- Scan windows (only with `scan_interval_us`, radio.py --scan-interval-ms
  and --scan-window-ms): a controller that scans or initiates hears an
  advertisement only when it arrives within a window: windows of
  `scan_window_us` start every `scan_interval_us` from the moment the
  controller started scanning or initiating (from neither). Outside them
  it neither reports the advertisement nor connects on it. Without the
  options a controller hears all the time (what baton's hosts ask for: a
  window equal to the interval), and the hosts' own scan parameters are
  not used.

What it leaves out:

- The peer's reply to every PDU: on a real link each PDU of one side is
  answered by one of the other (an empty PDU, 80 us on 1M, if it has no
  data), and the two alternate; here PDUs are placed in the order they were
  ready, and empty PDUs take no air.
- Retransmissions, CRC errors, the more-data bit's rules, peripheral
  latency, channel hopping, the transmit window of the first event
  (transmitWindowOffset) and of an update's instant, the PHY and data
  length update procedures (the PHY, data length and PDUs per event are
  fixed for the whole run), and encryption's effect on PDU size beyond the
  MIC.
- The host's HCI buffers: bumble reports each ACL packet completed as soon
  as the host sends it, so a host may queue any amount in the controller;
  the queue drains at the model's pace. (radio.py makes them as long as
  the data length, as a controller with 251-byte PDUs reports them.)
- LL control PDUs (LL_TERMINATE_IND, LL_CONNECTION_UPDATE_IND, encryption)
  and disconnection cross at once; data still under way when a connection
  ends is lost with it. Both hosts get LE Connection Update Complete at
  once (bumble sends it), not at the instant. bumble lets a peripheral's
  controller send LL_CONNECTION_UPDATE_IND too; the model takes it as the
  central's. An advertisement takes no air time and is heard on every
  advertising event (no channel is missed); the advertiser keeps
  advertising during the interval before the connection. The strangers
  (strangers.py) keep bumble's advertiser. A scanner's window does not
  move over the three advertising channels.
- HCI between each host and its controller (TCP on loopback) takes no
  modelled time.

`Timing` holds the parameters and the pure per-PDU and scan-window functions;
`ConnectionSchedule` is one connection's scheduler, a plain class whose
caller passes the time (in microseconds), so it is tested without sockets
or a clock (test_timing.py); `TimedLink` is bumble's LocalLink driving one
schedule per connection on the event loop's clock, and
`TimedConnections`, `TimedConnectionUpdates`, `ScanWindows` and
`TimedAdvertising` the controller mix-ins that delay connection creation,
choose an updated interval, keep a scanner to its windows and time legacy
advertising.
"""
import asyncio
import collections
import dataclasses
import logging
import math
import random

from bumble import core, ll
from bumble.controller import LegacyAdvertiser
from bumble.link import LocalLink

logger = logging.getLogger(__name__)

T_IFS_US = 150
# Preamble (1), access address (4), header (2), CRC (3) and MIC (4).
PDU_OVERHEAD_BYTES = 14
PHYS = {"1m": 8, "2m": 4}  # microseconds per byte on the air
DATA_LENGTHS = (27, 251)
ADV_DELAY_MAX_US = 10_000


def advertising_gap_us(units: int, generator: random.Random) -> int:
    """From one legacy advertising event to the next: the interval, in
    0.625 ms units, plus advDelay (0 to 10 ms, drawn each time)."""
    return units * 625 + generator.randrange(ADV_DELAY_MAX_US + 1)


class TimingError(ValueError):
    pass


def check_interval(interval_us: int) -> None:
    """Raises TimingError unless `interval_us` is a connection interval:
    7.5 ms to 4 s in steps of 1.25 ms (Core 6.0, Vol 6, Part B, 4.5.1)."""
    if not 7_500 <= interval_us <= 4_000_000 or interval_us % 1_250:
        raise TimingError(
            f"connection interval {interval_us / 1000} ms: give 7.5 to 4000 ms in"
            " steps of 1.25 ms (for example 7.5, 30, 40, 50)")


@dataclasses.dataclass(frozen=True)
class Timing:
    """The link's fixed parameters: connection interval (microseconds), PDUs
    per event and direction, the largest PDU payload, and the PHY."""

    interval_us: int = 40_000
    pdus_per_event: int = 6
    data_length: int = 251
    phy: str = "1m"
    # Scan windows: 0 hears all the time.
    scan_interval_us: int = 0
    scan_window_us: int = 0

    def __post_init__(self):
        check_interval(self.interval_us)
        if self.pdus_per_event < 1:
            raise TimingError(
                f"PDUs per event {self.pdus_per_event}: give at least 1 (default 6)")
        if self.data_length not in DATA_LENGTHS:
            raise TimingError(f"data length {self.data_length}: give 27 or 251")
        if self.phy not in PHYS:
            raise TimingError(f"PHY '{self.phy}': give 1m or 2m")
        if self.airtime_us(self.data_length) > self.interval_us:
            raise TimingError("a PDU of the data length does not fit in one connection interval")
        if self.scan_interval_us or self.scan_window_us:
            # 2.5 ms to 40.96 s (Core 6.0, Vol 4, Part E, 7.8.10), window <= interval.
            if not 2_500 <= self.scan_interval_us <= 40_960_000:
                raise TimingError(
                    f"scan interval {self.scan_interval_us / 1000} ms: give 2.5 to 40960 ms,"
                    " with --scan-window-ms")
            if not 2_500 <= self.scan_window_us <= self.scan_interval_us:
                raise TimingError(
                    f"scan window {self.scan_window_us / 1000} ms: give 2.5 ms up to the scan"
                    " interval, with --scan-interval-ms")

    @staticmethod
    def from_options(conn_interval_ms: float, pdus_per_event: int, data_length: int,
                     phy: str, scan_interval_ms: float = 0,
                     scan_window_ms: float = 0) -> "Timing":
        return Timing(round(conn_interval_ms * 1000), pdus_per_event, data_length, phy.lower(),
                      round(scan_interval_ms * 1000), round(scan_window_ms * 1000))

    def hears(self, now_us: int, scan_started_us: int) -> bool:
        """Whether a controller that started scanning at `scan_started_us`
        is within a scan window at `now_us`."""
        if not self.scan_interval_us:
            return True
        return (now_us - scan_started_us) % self.scan_interval_us < self.scan_window_us

    def airtime_us(self, payload: int) -> int:
        """How long a PDU with `payload` bytes of payload is on the air."""
        return (payload + PDU_OVERHEAD_BYTES) * PHYS[self.phy]

    def pdu_payloads(self, length: int) -> list[int]:
        """The payload sizes of the PDUs that carry an L2CAP packet of
        `length` bytes (an empty packet still takes one PDU)."""
        if length <= 0:
            return [0]
        full, rest = divmod(length, self.data_length)
        return [self.data_length] * full + ([rest] if rest else [])

    def describe(self) -> str:
        text = (f"connection interval {self.interval_us / 1000:g} ms, {self.pdus_per_event} PDUs"
                f" per event and direction, data length {self.data_length}, {self.phy.upper()} PHY")
        if self.scan_interval_us:
            text += (f", scan windows of {self.scan_window_us / 1000:g} ms every"
                     f" {self.scan_interval_us / 1000:g} ms")
        return text


@dataclasses.dataclass
class Event:
    """What is placed so far in one connection event: where its air is busy
    until (microseconds) and how many PDUs each direction has in it."""

    end_us: int
    counts: list


@dataclasses.dataclass(frozen=True)
class Placement:
    """One PDU's place: its event (index from the anchor), start and end."""

    event: int
    start_us: int
    end_us: int


class ConnectionSchedule:
    """One connection's events, shared by its two directions (0: central to
    peripheral, 1: the other way). `send` places a packet's PDUs and returns
    when the last one ends; it never moves a PDU placed before. Events are
    numbered from the anchor (0) for the whole connection; `update` changes
    the interval from an instant on."""

    # The central gives the peripheral at least 6 connection events before
    # the instant of a connection update (Core 6.0, Vol 6, Part B, 5.1.1).
    UPDATE_EVENTS = 6

    def __init__(self, timing: Timing, anchor_us: int):
        self.timing = timing
        self.anchor_us = anchor_us
        # Where each interval begins: (first event's index, its start, the
        # interval), in order; the first from the anchor on the timing's.
        self.segments: list[tuple[int, int, int]] = [(0, anchor_us, timing.interval_us)]
        self.events: dict[int, Event] = {}
        self.last_event = [0, 0]
        self.placements: list[tuple[int, Placement]] = []  # kept for tests when `record`
        self.record = False

    def event_start(self, index: int) -> int:
        for first, start, interval in reversed(self.segments):
            if index >= first:
                return start + (index - first) * interval
        raise ValueError(f"event {index} is before the anchor")

    def event_at(self, time_us: int) -> int:
        """The index of the event under way at `time_us` (the last to start
        at or before it; 0 before the anchor)."""
        if time_us <= self.anchor_us:
            return 0
        for first, start, interval in reversed(self.segments):
            if time_us >= start:
                return first + (time_us - start) // interval
        raise AssertionError("the first segment starts at the anchor")

    def first_event_from(self, time_us: int) -> int:
        """The index of the first event that starts at or after `time_us`."""
        index = self.event_at(time_us)
        return index if self.event_start(index) >= time_us else index + 1

    def events_between(self, from_us: int, to_us: int) -> int:
        """How many connection events start at or after `from_us` and before
        `to_us`, whether or not they carry anything."""
        if to_us <= from_us:
            return 0
        return self.first_event_from(to_us) - self.first_event_from(from_us)

    def interval_us(self, index: int) -> int:
        """The interval from event `index` to the next."""
        return self.event_start(index + 1) - self.event_start(index)

    def update(self, interval_us: int, now_us: int) -> int:
        """A connection update asked for at `now_us`: the events change to
        `interval_us` from the instant, the first event at least
        UPDATE_EVENTS after the one under way and after every event that
        holds a placed PDU (nothing placed moves). Returns the instant's
        index (its start is event_start of it)."""
        check_interval(interval_us)
        # last_event: each direction's latest event with a PDU in it.
        instant = max(self.event_at(now_us) + self.UPDATE_EVENTS, max(self.last_event) + 1)
        # Never before the last update's instant (time and the placed events
        # only go forward); at the same event, this one takes its place.
        start = self.event_start(instant)
        if self.segments[-1][0] == instant:
            self.segments.pop()
        self.segments.append((instant, start, interval_us))
        return instant

    def replan(self, now_us: int) -> None:
        """Forgets every placement after the event under way at `now_us`,
        so that what is still queued can be placed again (TimedLink.update:
        a controller sends its queue at the pace the events have when they
        come, not at the one they had when the host queued it)."""
        current = self.event_at(now_us)
        for later in [i for i in self.events if i > current]:
            del self.events[later]
        self.last_event = [min(last, current) for last in self.last_event]

    def place_pdu(self, direction: int, payload: int, ready_us: int) -> Placement:
        timing = self.timing
        airtime = timing.airtime_us(payload)
        current = self.event_at(ready_us)
        # Events before the one under way cannot take anything (a caller's
        # clock never goes back): forget them.
        for old in [i for i in self.events if i < current]:
            del self.events[old]
        index = max(current, self.last_event[direction])
        while True:
            start_of_event = self.event_start(index)
            event = self.events.get(index)
            if event is None:
                start = start_of_event
                open_to_it = ready_us <= start_of_event
                counts = [0, 0]
            else:
                start = event.end_us + T_IFS_US
                open_to_it = ready_us <= start
                counts = event.counts
            end = start + airtime
            if (open_to_it and counts[direction] < timing.pdus_per_event
                    and end <= self.event_start(index + 1)):
                if event is None:
                    event = self.events[index] = Event(end, counts)
                event.end_us = end
                event.counts[direction] += 1
                self.last_event[direction] = index
                placement = Placement(index, start, end)
                if self.record:
                    self.placements.append((direction, placement))
                return placement
            index += 1

    def send(self, direction: int, length: int, ready_us: int) -> int:
        """Places an L2CAP packet of `length` bytes ready at `ready_us`;
        returns the time its last byte has crossed."""
        end = ready_us
        for payload in self.timing.pdu_payloads(length):
            end = self.place_pdu(direction, payload, ready_us).end_us
        return end


def events_for(timing: Timing, length: int) -> int:
    """How many connection events a lone packet of `length` bytes needs
    when it is ready at an event's anchor (the model's closed form, for
    tests): PDUs fill events up to the per-event limit or the interval."""
    per_event = 1
    used = timing.airtime_us(timing.data_length)
    while (per_event < timing.pdus_per_event
           and used + T_IFS_US + timing.airtime_us(timing.data_length) <= timing.interval_us):
        used += T_IFS_US + timing.airtime_us(timing.data_length)
        per_event += 1
    return math.ceil(len(timing.pdu_payloads(length)) / per_event)


class TimedLink(LocalLink):
    """bumble's LocalLink with ACL data carried by the model: one schedule
    per connection, made when CONNECT_IND crosses (the anchor), and each
    direction's packets handed to the peer's controller in order at the
    times the schedule gives."""

    def __init__(self, timing: Timing):
        super().__init__()
        self.timing = timing
        # Keyed by the unordered pair of addresses (bytes): (central address,
        # schedule, generation).
        self.schedules: dict[frozenset, tuple[bytes, ConnectionSchedule, int]] = {}
        self.generation = 0
        self.queues: dict[tuple[frozenset, int], collections.deque] = {}
        self.timers: dict[tuple[frozenset, int], asyncio.TimerHandle] = {}

    @staticmethod
    def now_us() -> int:
        return round(asyncio.get_running_loop().time() * 1_000_000)

    def send_advertising_pdu(self, sender_controller, packet) -> None:
        if isinstance(packet, ll.ConnectInd):
            central = bytes(packet.initiator_address)
            key = frozenset((central, bytes(packet.advertiser_address)))
            self.generation += 1
            self.schedules[key] = (
                central, ConnectionSchedule(self.timing, self.now_us()), self.generation)
        super().send_advertising_pdu(sender_controller, packet)

    def send_ll_control_pdu(self, sender_address, receiver_address, packet) -> None:
        # A connection that ends takes its data still under way with it, as
        # on a real radio: without this, data queued for a later event
        # reached a new connection between one of the two controllers and
        # the other's address (a reused controller with a new address
        # connecting to the same peer), with the same handle and channel.
        key = frozenset((bytes(sender_address), bytes(receiver_address)))
        if isinstance(packet, ll.TerminateInd):
            self.schedules.pop(key, None)
        elif isinstance(packet, ll.ConnectionUpdateInd) and key in self.schedules:
            # The interval is in 1.25 ms units. One the model cannot take
            # (bumble passes on whatever the host asked) leaves it as it was.
            try:
                self.update(key, packet.interval * 1_250)
            except TimingError as error:
                logger.warning("timed link: connection update not applied: %s", error)
        super().send_ll_control_pdu(sender_address, receiver_address, packet)

    def send_acl_data(self, sender_controller, destination_address, transport, data) -> None:
        if transport != core.PhysicalTransport.LE:
            super().send_acl_data(sender_controller, destination_address, transport, data)
            return
        destination = self.find_le_controller(destination_address)
        if destination is None:
            return
        source_address = sender_controller.random_address
        source = bytes(source_address)
        key = frozenset((source, bytes(destination_address)))
        if key not in self.schedules:
            # Not made by a CONNECT_IND this link saw: anchor it now.
            logger.warning("timed link: no connection event anchor for %s, starting one",
                           source_address)
            self.generation += 1
            self.schedules[key] = (source, ConnectionSchedule(self.timing, self.now_us()),
                                   self.generation)
        central, schedule, generation = self.schedules[key]
        direction = 0 if source == central else 1
        now = self.now_us()
        due = schedule.send(direction, len(data), now)
        queue = self.queues.setdefault((key, direction), collections.deque())
        queue.append((due, now, generation, destination, source_address, transport, bytes(data)))
        if (key, direction) not in self.timers:
            self.arm(key, direction)

    def update(self, key, interval_us: int) -> None:
        """A connection update of the pair: the schedule forgets what it
        placed after the event under way, takes the new interval from the
        instant, and places every packet still queued again, in order (a
        controller sends its queue at the pace the events have when they
        come). A packet whose first PDUs already went is placed whole again,
        from now."""
        check_interval(interval_us)
        schedule = self.schedules[key][1]
        now = self.now_us()
        schedule.replan(now)
        schedule.update(interval_us, now)
        for direction in (0, 1):
            queue = self.queues.get((key, direction))
            if not queue:
                continue
            timer = self.timers.pop((key, direction), None)
            if timer is not None:
                timer.cancel()
            entries = list(queue)
            queue.clear()
            for _, ready, *rest in entries:
                due = schedule.send(direction, len(rest[-1]), max(ready, now))
                queue.append((due, ready, *rest))
            self.arm(key, direction)

    def arm(self, key, direction) -> None:
        loop = asyncio.get_running_loop()
        due = self.queues[(key, direction)][0][0]
        self.timers[(key, direction)] = loop.call_at(
            due / 1_000_000, self.flush, key, direction)

    def flush(self, key, direction) -> None:
        del self.timers[(key, direction)]
        queue = self.queues[(key, direction)]
        now = self.now_us()
        current = self.schedules.get(key)
        while queue and queue[0][0] <= now:
            _, _, generation, destination, source_address, transport, data = queue.popleft()
            # Data of a connection that was replaced (disconnected and made
            # again) is lost with it.
            if current is not None and current[2] == generation:
                destination.on_link_acl_data(source_address, transport, data)
        if queue:
            self.arm(key, direction)


class TimedConnections:
    """Controller mix-in (before bumble's Controller in the bases): the
    connection is created one connection interval after the central hears
    its target's advertisement, not at once."""

    connecting = None

    def create_le_connection(self, peer_address) -> None:
        pending = self.pending_le_connection
        if self.connecting is pending:
            return  # already under way (another advertisement of the target)
        self.connecting = pending

        def create() -> None:
            self.connecting = None
            if self.pending_le_connection is pending:
                super(TimedConnections, self).create_le_connection(peer_address)

        asyncio.get_running_loop().call_later(self.link.timing.interval_us / 1_000_000, create)


class TimedConnectionUpdates:
    """Controller mix-in (before bumble's Controller in the bases): LE
    Connection Update picks the interval a controller would within the
    host's range, the link's interval when the range holds it, else the
    range's top (bumble always takes the top). The link applies it from the
    instant (ConnectionSchedule.update)."""

    def on_hci_le_connection_update_command(self, command):
        preferred = self.link.timing.interval_us // 1_250
        if command.connection_interval_min <= preferred <= command.connection_interval_max:
            command.connection_interval_max = preferred
        return super().on_hci_le_connection_update_command(command)


class ScanWindows:
    """Controller mix-in (before bumble's Controller in the bases): while it
    scans or initiates, an advertisement is heard only within the link's
    scan windows, counted from when it started (Timing.hears)."""

    scan_started_us = 0

    def listening(self) -> bool:
        return bool(self.le_scan_enable or self.pending_le_connection)

    def start_listening(self) -> None:
        if not self.listening():
            self.scan_started_us = TimedLink.now_us()

    def on_hci_le_set_scan_enable_command(self, command):
        if command.le_scan_enable:
            self.start_listening()
        return super().on_hci_le_set_scan_enable_command(command)

    def on_hci_le_set_extended_scan_enable_command(self, command):
        if command.enable:
            self.start_listening()
        return super().on_hci_le_set_extended_scan_enable_command(command)

    def on_hci_le_create_connection_command(self, command):
        self.start_listening()
        return super().on_hci_le_create_connection_command(command)

    def on_hci_le_extended_create_connection_command(self, command):
        self.start_listening()
        return super().on_hci_le_extended_create_connection_command(command)

    def on_ll_advertising_pdu(self, packet) -> None:
        if (isinstance(packet, (ll.AdvInd, ll.AdvExtInd))
                and not self.link.timing.hears(TimedLink.now_us(), self.scan_started_us)):
            return
        super().on_ll_advertising_pdu(packet)


class TimedLegacyAdvertiser(LegacyAdvertiser):
    """bumble's legacy advertiser with the interval in 0.625 ms units and
    advDelay (advertising_gap_us)."""

    generator = random.Random()

    def _on_timer_fired(self) -> None:
        self.send_advertising_data()
        gap = advertising_gap_us(self.advertising_interval_min, self.generator)
        self.timer_handle = asyncio.get_running_loop().call_later(
            gap / 1_000_000, self._on_timer_fired)


class TimedAdvertising:
    """Controller mix-in (before bumble's Controller in the bases): legacy
    advertising on the real interval with advDelay."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.le_legacy_advertiser = TimedLegacyAdvertiser(self)
