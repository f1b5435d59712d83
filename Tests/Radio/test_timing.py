"""Tests of the timed radio's clock (timing.py): the scheduler against the
model with times passed in, then two bumble controllers on a TimedLink on
the event loop's clock.

    .venv/bin/python -m unittest Tests/Radio/test_timing.py
"""
import asyncio
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble import hci  # noqa: E402
from bumble.controller import Controller  # noqa: E402

from timing import (  # noqa: E402
    T_IFS_US, ConnectionSchedule, ScanWindows, TimedAdvertising, TimedConnections,
    TimedConnectionUpdates, TimedLink, Timing, TimingError, advertising_gap_us, events_for)


def traffic(schedule: ConnectionSchedule, seed: int, packets: int):
    """Random packets both ways at random, increasing times; returns
    (direction, length, ready, delivered) in the order sent."""
    generator = random.Random(seed)
    now = schedule.anchor_us - 5_000
    sent = []
    for _ in range(packets):
        now += generator.choice([0, 0, 100, 2_000, 15_000, 60_000])
        direction = generator.randrange(2)
        length = generator.choice([4, 27, 60, 251, 300, 1_000, 2_500])
        sent.append((direction, length, now, schedule.send(direction, length, now)))
    return sent


class TimingFunctions(unittest.TestCase):
    def test_airtime_is_payload_plus_14_bytes_at_the_phy_rate(self):
        self.assertEqual(Timing(phy="1m").airtime_us(251), 2_120)
        self.assertEqual(Timing(phy="2m").airtime_us(251), 1_060)
        self.assertEqual(Timing(phy="1m").airtime_us(27), 328)
        self.assertEqual(Timing(phy="1m").airtime_us(0), 112)

    def test_a_packet_is_cut_at_the_data_length(self):
        self.assertEqual(Timing(data_length=251).pdu_payloads(1_000), [251, 251, 251, 247])
        self.assertEqual(Timing(data_length=27).pdu_payloads(54), [27, 27])
        self.assertEqual(len(Timing(data_length=27).pdu_payloads(1_000)), 38)
        self.assertEqual(Timing().pdu_payloads(0), [0])

    def test_advertising_takes_its_units_and_advdelay(self):
        generator = random.Random(3)
        gaps = [advertising_gap_us(320, generator) for _ in range(2_000)]
        self.assertTrue(all(200_000 <= gap <= 210_000 for gap in gaps))
        # advDelay drawn each time, over its whole range.
        self.assertLess(min(gaps), 200_500)
        self.assertGreater(max(gaps), 209_500)

    def test_options_are_checked(self):
        self.assertEqual(Timing.from_options(7.5, 6, 251, "2M").interval_us, 7_500)
        for bad in [dict(conn_interval_ms=5), dict(conn_interval_ms=41),
                    dict(pdus_per_event=0), dict(data_length=100), dict(phy="coded")]:
            options = dict(conn_interval_ms=40, pdus_per_event=6, data_length=251, phy="1m")
            options.update(bad)
            with self.assertRaises(TimingError, msg=str(bad)):
                Timing.from_options(**options)
        for interval, window in [(100, 0), (0, 10), (10, 20), (1, 1)]:
            with self.assertRaises(TimingError, msg=(interval, window)):
                Timing.from_options(40, 6, 251, "1m", interval, window)

    def test_a_scanner_hears_only_in_its_windows(self):
        timing = Timing.from_options(40, 6, 251, "1m", 100, 10)
        heard = [t for t in range(0, 1_000_000, 500) if timing.hears(t + 3_000, 3_000)]
        self.assertTrue(heard)
        self.assertTrue(all(t % 100_000 < 10_000 for t in heard))
        self.assertEqual(len(heard), 10 * 20)  # 20 samples of 0.5 ms per window
        self.assertTrue(all(Timing().hears(t, 0) for t in range(0, 1_000_000, 700)))


class Schedule(unittest.TestCase):
    def test_data_leaves_only_at_events_and_fits_in_them(self):
        for timing in [Timing(), Timing(interval_us=7_500), Timing(data_length=27, phy="2m"),
                       Timing(interval_us=30_000, pdus_per_event=2)]:
            schedule = ConnectionSchedule(timing, anchor_us=1_234_567)
            schedule.record = True
            traffic(schedule, seed=timing.interval_us, packets=300)
            by_event = {}
            for direction, p in schedule.placements:
                by_event.setdefault(p.event, []).append((direction, p))
            for event, pdus in by_event.items():
                pdus.sort(key=lambda item: item[1].start_us)
                anchor = schedule.anchor_us + event * timing.interval_us
                # The first PDU starts at the event's anchor, a multiple of the
                # interval from the connection's; the rest follow T_IFS apart.
                self.assertEqual(pdus[0][1].start_us, anchor)
                self.assertEqual((pdus[0][1].start_us - schedule.anchor_us) % timing.interval_us, 0)
                for (_, before), (_, after) in zip(pdus, pdus[1:]):
                    self.assertEqual(after.start_us, before.end_us + T_IFS_US)
                self.assertLessEqual(pdus[-1][1].end_us, anchor + timing.interval_us)
                for direction in (0, 1):
                    count = sum(1 for d, _ in pdus if d == direction)
                    self.assertLessEqual(count, timing.pdus_per_event, (timing, event))
            # Some event was full, or the test shows nothing about the limit.
            self.assertTrue(any(
                sum(1 for d, _ in pdus if d == 0) == timing.pdus_per_event
                or pdus[-1][1].end_us + T_IFS_US + timing.airtime_us(timing.data_length)
                > schedule.anchor_us + (event + 1) * timing.interval_us
                for event, pdus in by_event.items()))

    def test_order_is_kept_in_each_direction(self):
        schedule = ConnectionSchedule(Timing(interval_us=7_500), anchor_us=0)
        sent = traffic(schedule, seed=7, packets=500)
        for direction in (0, 1):
            times = [delivered for d, _, _, delivered in sent if d == direction]
            self.assertEqual(times, sorted(times))
            self.assertEqual(len(set(times)), len(times))
        for _, _, ready, delivered in sent:
            self.assertGreater(delivered, ready)

    def test_a_1000_byte_packet_takes_the_computed_events(self):
        cases = [
            # interval, PDUs per event, data length: events, end in the last event
            (Timing(), 1, 3 * (2_120 + 150) + 2_088),
            (Timing(interval_us=7_500), 2, 2_088),  # 3 PDUs of 251 fit in 7.5 ms
            (Timing(pdus_per_event=2), 2, 2_120 + 150 + 2_088),
            (Timing(data_length=27), 7, 328 + 150 + 120),  # 38 PDUs, 6 per event
            (Timing(phy="2m"), 1, 3 * (1_060 + 150) + 1_044),
        ]
        for timing, events, offset in cases:
            self.assertEqual(events_for(timing, 1_000), events, timing)
            schedule = ConnectionSchedule(timing, anchor_us=500_000)
            delivered = schedule.send(0, 1_000, 500_000)
            self.assertEqual(delivered, 500_000 + (events - 1) * timing.interval_us + offset,
                             timing)

    def test_ready_after_the_anchor_waits_for_the_next_event(self):
        timing = Timing()
        schedule = ConnectionSchedule(timing, anchor_us=0)
        self.assertEqual(schedule.send(0, 100, 1), 40_000 + timing.airtime_us(100))
        # Ready while that event still runs: joins it, T_IFS after.
        first_end = 40_000 + timing.airtime_us(100)
        self.assertEqual(schedule.send(1, 100, first_end),
                         first_end + T_IFS_US + timing.airtime_us(100))
        # Ready after the event ended: the next one.
        self.assertEqual(schedule.send(0, 10, 60_000), 80_000 + timing.airtime_us(10))

    def test_the_other_direction_shares_the_events_air(self):
        timing = Timing(interval_us=7_500)
        schedule = ConnectionSchedule(timing, anchor_us=0)
        # Three full PDUs leave 690 us of a 7.5 ms event: a full reply ready at
        # the anchor goes in the next event, a short one in this.
        schedule.send(0, 753, 0)
        self.assertEqual(schedule.send(1, 251, 0), 7_500 + timing.airtime_us(251))
        self.assertEqual(schedule.send(1, 20, 0), 7_500 + timing.airtime_us(251) + T_IFS_US
                         + timing.airtime_us(20))

    def test_an_update_changes_the_interval_from_its_instant(self):
        schedule = ConnectionSchedule(Timing(interval_us=40_000), anchor_us=100_000)
        # Asked for during event 1: the instant is event 7, at the old pace.
        self.assertEqual(schedule.update(7_500, 150_000), 7)
        self.assertEqual([schedule.event_start(i) for i in range(10)],
                         [100_000 + i * 40_000 for i in range(8)] + [387_500, 395_000])
        self.assertEqual([schedule.event_at(t) for t in (379_999, 380_000, 387_499, 387_500)],
                         [6, 7, 7, 8])
        self.assertEqual(schedule.events_between(100_000, 380_000), 7)
        self.assertEqual(schedule.events_between(380_000, 420_000), 6)
        self.assertEqual(schedule.events_between(99_000, 100_001), 1)
        # After the instant the events are 7.5 ms long: three full PDUs fit
        # in one (6 would in 40 ms), and they end by the next event.
        schedule.record = True
        end = schedule.send(0, 251 * 9, 380_000)
        self.assertEqual([p.event for _, p in schedule.placements], [7, 7, 7, 8, 8, 8, 9, 9, 9])
        self.assertEqual(end, 395_000 + 3 * 2_120 + 2 * T_IFS_US)

    def test_an_update_moves_nothing_placed(self):
        schedule = ConnectionSchedule(Timing(interval_us=40_000, pdus_per_event=1), anchor_us=0)
        schedule.record = True
        schedule.send(0, 251 * 10, 0)  # one PDU an event: events 0 to 9
        placed = [p for _, p in schedule.placements]
        self.assertEqual([p.event for p in placed], list(range(10)))
        # Asked for in event 0: not at event 6, after the last placed PDU's.
        self.assertEqual(schedule.update(100_000, 10_000), 10)
        for p in placed:
            self.assertEqual(p.start_us, schedule.event_start(p.event))
            self.assertLessEqual(p.end_us, schedule.event_start(p.event + 1))
        self.assertEqual(schedule.event_start(10), 400_000)
        schedule.send(0, 251 * 3, 20_000)
        self.assertEqual([p.start_us for _, p in schedule.placements[10:]],
                         [400_000, 500_000, 600_000])

    def test_an_update_before_the_last_ones_instant(self):
        schedule = ConnectionSchedule(Timing(interval_us=40_000), anchor_us=0)
        self.assertEqual(schedule.update(100_000, 0), 6)
        # Never before the pending instant; at the same event it replaces it.
        self.assertEqual(schedule.update(20_000, 50_000), 7)
        self.assertEqual([schedule.event_start(i) for i in (6, 7, 8)],
                         [240_000, 340_000, 360_000])
        self.assertEqual(schedule.update(50_000, 60_000), 7)
        self.assertEqual(schedule.segments,
                         [(0, 0, 40_000), (6, 240_000, 100_000), (7, 340_000, 50_000)])

    def test_an_update_to_an_invalid_interval_is_refused(self):
        schedule = ConnectionSchedule(Timing(), anchor_us=0)
        for bad in (0, 6_250, 41_000, 4_001_250):
            with self.assertRaises(TimingError, msg=bad):
                schedule.update(bad, 0)
        self.assertEqual(schedule.event_start(100), 100 * 40_000)
        self.assertEqual(schedule.update(4_000_000, 0), 6)


class Host:
    """A host that records what its controller sends it, with the time."""

    def __init__(self):
        self.packets = []
        self.changed = asyncio.Event()

    def on_packet(self, packet: bytes) -> None:
        self.packets.append((asyncio.get_running_loop().time(), hci.HCI_Packet.from_bytes(packet)))
        self.changed.set()

    async def wait_for(self, matches, timeout=5.0):
        async def find():
            while True:
                for when, packet in self.packets:
                    if matches(packet):
                        return when, packet
                self.changed.clear()
                await self.changed.wait()
        return await asyncio.wait_for(find(), timeout)


class TimedController(TimedConnections, TimedConnectionUpdates, ScanWindows, TimedAdvertising,
                      Controller):
    pass


class HearingController(TimedController):
    """Records when each advertisement got past the scan windows."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.heard_us = []

    def on_advertising_pdu(self, pdu) -> None:
        self.heard_us.append(TimedLink.now_us())
        super().on_advertising_pdu(pdu)


def set_random_address(controller, index: int) -> hci.Address:
    address = hci.Address(bytes([index + 1, 0, 0, 0, 0, 0xC0]), hci.Address.RANDOM_DEVICE_ADDRESS)
    controller.on_hci_packet(hci.HCI_LE_Set_Random_Address_Command(random_address=address))
    return address


def advertise(controller, interval: int) -> None:
    """Legacy ADV_IND every `interval` ms (bumble reads the units as ms)."""
    controller.on_hci_packet(hci.HCI_LE_Set_Advertising_Parameters_Command(
        advertising_interval_min=interval, advertising_interval_max=interval,
        advertising_type=hci.HCI_LE_Set_Advertising_Parameters_Command.AdvertisingType.ADV_IND,
        own_address_type=hci.Address.RANDOM_DEVICE_ADDRESS, peer_address_type=0,
        peer_address=hci.Address.ANY, advertising_channel_map=7, advertising_filter_policy=0))
    controller.on_hci_packet(hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=1))


def connect_pair(timing: Timing):
    """A TimedLink with two timed controllers and their hosts, the central
    asked (now) to connect to the peripheral, which advertises every 20 ms:
    (link, hosts, central, the time asked). The connection is made as the
    model says; wait for it on the hosts."""
    link = TimedLink(timing)
    hosts = [Host(), Host()]
    central, peripheral = (TimedController(f"T{i}", host_sink=hosts[i], link=link)
                           for i in range(2))
    addresses = [set_random_address(c, i) for i, c in enumerate((central, peripheral))]
    advertise(peripheral, 20)
    asked = asyncio.get_running_loop().time()
    central.on_hci_packet(hci.HCI_LE_Create_Connection_Command(
        le_scan_interval=16, le_scan_window=16, initiator_filter_policy=0,
        peer_address_type=hci.Address.RANDOM_DEVICE_ADDRESS, peer_address=addresses[1],
        own_address_type=hci.Address.RANDOM_DEVICE_ADDRESS, connection_interval_min=32,
        connection_interval_max=32, max_latency=0, supervision_timeout=200,
        min_ce_length=0, max_ce_length=0))
    return link, hosts, central, asked


def complete(packet):
    return isinstance(packet, hci.HCI_LE_Connection_Complete_Event)


class ThroughALocalLink(unittest.IsolatedAsyncioTestCase):
    async def test_connection_and_data_follow_the_events(self):
        timing = Timing(interval_us=40_000)
        link, hosts, central, asked = connect_pair(timing)
        made = []
        for host in hosts:
            made.append(await host.wait_for(complete))
        # Made one interval after the advertisement was heard, not before.
        for when, _ in made:
            self.assertGreaterEqual(when - asked, timing.interval_us / 1e6 - 0.002)
        handle = made[0][1].connection_handle
        _, schedule, _ = next(iter(link.schedules.values()))
        schedule.record = True

        # A 1000-byte L2CAP packet (4 bytes of header), then a small one.
        big = (996).to_bytes(2, "little") + (0x0040).to_bytes(2, "little") + bytes(996)
        small = (6).to_bytes(2, "little") + (0x0040).to_bytes(2, "little") + b"second"
        await asyncio.sleep(0.005)  # after the anchor: they wait for the next event
        for data in (big, small):
            central.on_hci_packet(hci.HCI_AclDataPacket(handle, 0b10, 0, len(data), data))

        def acl(packet):
            return isinstance(packet, hci.HCI_AclDataPacket)
        await hosts[1].wait_for(lambda p: acl(p) and bytes(p.data) == small)
        arrived = [(when, bytes(p.data)) for when, p in hosts[1].packets if acl(p)]
        self.assertEqual([data for _, data in arrived], [big, small])
        # The link's schedule: the big one ends at 3 full PDUs and one of 247
        # bytes into an event after the anchor's, the small one a T_IFS and
        # one 10-byte PDU later, in the same event.
        ends = [p.end_us for _, p in schedule.placements]
        self.assertEqual(len(ends), 5)
        big_end = 3 * (2_120 + T_IFS_US) + 2_088
        small_end = big_end + T_IFS_US + timing.airtime_us(10)
        self.assertEqual([ends[3] - schedule.anchor_us, ends[4] - schedule.anchor_us],
                         [timing.interval_us + big_end, timing.interval_us + small_end])
        # Each arrived at its time, never before (the loop's timers may be
        # late on a busy machine, so only loosely after).
        for (when, _), end in zip(arrived, (ends[3], ends[4])):
            self.assertGreaterEqual(when, end / 1e6 - 0.0005)
            self.assertLess(when - end / 1e6, 0.030)

    async def test_data_under_way_is_lost_with_its_connection(self):
        timing = Timing(interval_us=40_000)
        link, hosts, central, _ = connect_pair(timing)
        _, made = await hosts[0].wait_for(complete)
        await hosts[1].wait_for(complete)
        handle = made.connection_handle
        # Three 1000-byte packets need more than one event; the connection
        # ends before the first of them is due.
        data = (996).to_bytes(2, "little") + (0x0040).to_bytes(2, "little") + bytes(996)
        await asyncio.sleep(0.005)
        for _ in range(3):
            central.on_hci_packet(hci.HCI_AclDataPacket(handle, 0b10, 0, len(data), data))
        central.on_hci_packet(hci.HCI_Disconnect_Command(connection_handle=handle, reason=0x13))

        def gone(packet):
            return isinstance(packet, hci.HCI_Disconnection_Complete_Event)
        await hosts[1].wait_for(gone)
        # Past the events that would have carried them: nothing arrived.
        await asyncio.sleep(3 * timing.interval_us / 1e6)
        self.assertFalse([p for _, p in hosts[1].packets if isinstance(p, hci.HCI_AclDataPacket)])
        self.assertEqual(link.schedules, {})

    async def test_what_is_queued_goes_at_the_pace_after_an_update(self):
        # One PDU an event every 100 ms: twelve packets queued would take
        # until event 12. A move to 7.5 ms right after (the range's top: the
        # link's 100 ms is outside it) takes effect six events on, and what
        # is still queued then goes at 7.5 ms: all in by about 0.65 s.
        timing = Timing(interval_us=100_000, pdus_per_event=1)
        link, hosts, central, _ = connect_pair(timing)
        _, made = await hosts[0].wait_for(complete)
        await hosts[1].wait_for(complete)
        handle = made.connection_handle
        sent = asyncio.get_running_loop().time()
        for i in range(12):
            data = (196).to_bytes(2, "little") + (0x0040).to_bytes(2, "little") + bytes([i]) * 196
            central.on_hci_packet(hci.HCI_AclDataPacket(handle, 0b10, 0, len(data), data))
        central.on_hci_packet(hci.HCI_LE_Connection_Update_Command(
            connection_handle=handle, connection_interval_min=6, connection_interval_max=6,
            max_latency=0, supervision_timeout=200, min_ce_length=0, max_ce_length=0))

        def last(packet):
            return isinstance(packet, hci.HCI_AclDataPacket) and packet.data[4] == 11
        arrived, _ = await hosts[1].wait_for(last, timeout=3)
        self.assertLess(arrived - sent, 0.9)
        order = [p.data[4] for _, p in hosts[1].packets if isinstance(p, hci.HCI_AclDataPacket)]
        self.assertEqual(order, list(range(12)))

    async def test_a_connection_update_changes_the_links_interval(self):
        timing = Timing(interval_us=40_000)
        # In 1.25 ms units: 150 to 200 ms gets the top, 30 to 60 ms the
        # link's 40 ms.
        for low, high, chosen in [(120, 160, 160), (24, 48, 32)]:
            with self.subTest(low=low, high=high):
                link, hosts, central, _ = connect_pair(timing)
                _, made = await hosts[0].wait_for(complete)
                await hosts[1].wait_for(complete)
                _, schedule, _ = next(iter(link.schedules.values()))
                before = TimedLink.now_us()
                central.on_hci_packet(hci.HCI_LE_Connection_Update_Command(
                    connection_handle=made.connection_handle, connection_interval_min=low,
                    connection_interval_max=high, max_latency=0, supervision_timeout=200,
                    min_ce_length=0, max_ce_length=0))
                after = TimedLink.now_us()
                for host in hosts:
                    _, update = await host.wait_for(
                        lambda p: isinstance(p, hci.HCI_LE_Connection_Update_Complete_Event))
                    self.assertEqual(update.connection_interval, chosen)
                self.assertEqual(len(schedule.segments), 2)
                instant = schedule.segments[-1][0]
                self.assertGreaterEqual(instant, schedule.event_at(before) + 6)
                self.assertLessEqual(instant, schedule.event_at(after) + 6)
                self.assertEqual(schedule.interval_us(instant - 1), timing.interval_us)
                self.assertEqual(schedule.interval_us(instant), chosen * 1_250)

    async def test_a_scanner_reports_only_in_its_windows(self):
        timing = Timing.from_options(40, 6, 251, "1m", 100, 20)
        link = TimedLink(timing)
        hosts = [Host(), Host()]
        scanner, advertiser = (HearingController(f"S{i}", host_sink=hosts[i], link=link)
                               for i in range(2))
        set_random_address(scanner, 0)
        set_random_address(advertiser, 1)
        advertise(advertiser, 8)  # every 5 to 15 ms
        await asyncio.sleep(0.05)  # advertising well before the scan starts
        scanner.on_hci_packet(hci.HCI_LE_Set_Scan_Enable_Command(
            le_scan_enable=1, filter_duplicates=0))
        started = scanner.scan_started_us / 1e6

        def report(packet):
            return isinstance(packet, (hci.HCI_LE_Advertising_Report_Event,
                                       hci.HCI_LE_Extended_Advertising_Report_Event))
        await hosts[0].wait_for(
            lambda p: report(p) and hosts[0].packets[-1][0] - started > 0.45)
        # (Before the scan, advertisements pass to bumble, which ignores them.)
        heard = [t - scanner.scan_started_us for t in scanner.heard_us
                 if t >= scanner.scan_started_us]
        # Heard in every window (an advertisement at most 15 ms after the
        # last, windows of 20 ms), never outside one, and each reported
        # (twice: bumble's report and its copy as a scan response).
        self.assertGreaterEqual(len({t // 100_000 for t in heard}), 4, heard)
        for t in heard:
            self.assertLess(t % 100_000, 20_000, heard)
        reports = [when for when, p in hosts[0].packets if report(p)]
        self.assertEqual(len(reports), 2 * len(heard))

    async def test_legacy_advertising_is_on_its_interval_with_advdelay(self):
        link = TimedLink(Timing())
        advertiser = TimedController("A", host_sink=Host(), link=link)
        listener = HearingController("L", host_sink=Host(), link=link)
        set_random_address(advertiser, 0)
        set_random_address(listener, 1)
        advertise(advertiser, 32)  # 20 ms (bumble's own advertiser: 32 ms)
        await asyncio.sleep(0.5)
        gaps = [b - a for a, b in zip(listener.heard_us, listener.heard_us[1:])]
        self.assertGreaterEqual(len(gaps), 10, gaps)
        # Never sooner than the interval (timers are only ever late).
        self.assertTrue(all(gap >= 20_000 - 500 for gap in gaps), gaps)
        self.assertLess(sorted(gaps)[len(gaps) // 2], 30_000, gaps)


if __name__ == "__main__":
    unittest.main()
