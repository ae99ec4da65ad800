"""The queued sleep ahead of each timed call: long enough for the host's launch, no longer."""

from harness.judge.verdict.queued_sleep import EXPOSED_RETRIES, MIN_QUEUED_SLEEP_US, SLACK, QueuedSleep, quantile


def test_one_slow_warm_up_launch_sets_the_sleep_only_until_the_calls_show_it_was_one():
    sleep = QueuedSleep.after_warmup([3300.0])  # a warm-up that allocated, say
    assert sleep.us == 2 * 3300.0 + MIN_QUEUED_SLEEP_US
    for _ in range(8):
        assert sleep.counts(150.0, exposed=False)
    assert sleep.us == 2 * 3300.0 + MIN_QUEUED_SLEEP_US  # nine launch times: the slowest still counts
    assert sleep.counts(150.0, exposed=False)
    assert sleep.us == SLACK * (2 * 150.0 + MIN_QUEUED_SLEEP_US)  # ten: the slowest is one in ten, left out


def test_a_sleep_within_the_slack_of_what_the_launches_need_stays():
    sleep = QueuedSleep.after_warmup([300.0])  # the warm-up launched slower than the timed calls do
    for _ in range(20):
        assert sleep.counts(200.0, exposed=False)
    assert sleep.us == 2 * 300.0 + MIN_QUEUED_SLEEP_US


def test_a_launch_slow_one_call_in_five_keeps_the_sleep_long():
    sleep = QueuedSleep.after_warmup([150.0])
    exposed_calls = 0
    for call in range(60):
        host_us = 3000.0 if call % 5 == 4 else 150.0
        exposed_calls += not sleep.counts(host_us, exposed=host_us > sleep.us)
    assert exposed_calls == 2 and sleep.us >= 2 * 3000.0  # the second once ten launch times left the first out


def test_an_exposed_call_never_counts_and_raises_the_sleep_past_its_launch():
    sleep = QueuedSleep.after_warmup([100.0, 120.0])
    assert not sleep.counts(500.0, exposed=True)
    assert sleep.us >= 2 * 500.0 and sleep.exposed == 1
    for _ in range(EXPOSED_RETRIES):
        sleep.counts(500.0, exposed=True)
    assert sleep.counts(500.0, exposed=True) and sleep.us == sleep.first_us  # exposed at any sleep: counted


def test_the_quantile_is_the_nearest_rank():
    assert quantile([5.0], 0.9) == 5.0
    assert quantile([1.0, 100.0], 0.9) == 100.0
    assert quantile([float(v) for v in range(1, 10)] + [100.0], 0.9) == 9.0
