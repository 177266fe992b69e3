import pytest

from token_bucket import TokenBucket


class FakeClock:
    def __init__(self, start: float = 100.0) -> None:
        self.now = start
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make(rate=2.0, capacity=4.0, start=100.0):
    clock = FakeClock(start)
    return TokenBucket(rate, capacity, clock=clock), clock


def test_starts_full():
    bucket, _ = make(capacity=4)
    assert bucket.tokens == pytest.approx(4.0)


def test_allow_consumes_tokens():
    bucket, _ = make(capacity=4)
    assert bucket.allow() is True
    assert bucket.allow(2) is True
    assert bucket.tokens == pytest.approx(1.0)


def test_burst_up_to_capacity_then_denied():
    bucket, _ = make(rate=1, capacity=3)
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]


def test_denied_request_consumes_nothing():
    bucket, _ = make(rate=1, capacity=4)
    assert bucket.allow(3)
    assert bucket.allow(2) is False
    assert bucket.tokens == pytest.approx(1.0)
    assert bucket.allow(1) is True


def test_exact_remaining_tokens_allowed():
    bucket, _ = make(rate=1, capacity=5)
    assert bucket.allow(2.5)
    assert bucket.allow(2.5)
    assert bucket.allow(0.5) is False


def test_refill_over_time():
    bucket, clock = make(rate=2, capacity=4)
    assert bucket.allow(4)
    clock.advance(0.5)
    assert bucket.tokens == pytest.approx(1.0)
    assert bucket.allow(1)
    assert not bucket.allow(1)


def test_fractional_refill_accumulates():
    bucket, clock = make(rate=1, capacity=2)
    bucket.allow(2)
    clock.advance(0.25)
    assert not bucket.allow(1)
    clock.advance(0.25)
    assert not bucket.allow(1)
    clock.advance(0.5)
    assert bucket.allow(1)


def test_refill_capped_at_capacity():
    bucket, clock = make(rate=10, capacity=3)
    bucket.allow(1)
    clock.advance(1000)
    assert bucket.tokens == pytest.approx(3.0)
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]


def test_clock_going_backwards_adds_nothing():
    bucket, clock = make(rate=1, capacity=10)
    bucket.allow(10)
    clock.advance(-5)
    assert bucket.tokens == pytest.approx(0.0)
    clock.advance(5)
    assert bucket.tokens == pytest.approx(0.0)
    clock.advance(2)
    assert bucket.tokens == pytest.approx(2.0)


def test_uses_injected_clock():
    clock = FakeClock(0.0)
    bucket = TokenBucket(1, 1, clock)
    bucket.allow()
    assert clock.calls >= 2
    clock.advance(1)
    assert bucket.allow()


def test_wait_time_zero_when_available():
    bucket, _ = make(rate=2, capacity=4)
    assert bucket.wait_time(4) == 0.0


def test_wait_time_when_short():
    bucket, clock = make(rate=2, capacity=4)
    bucket.allow(3)
    assert bucket.wait_time(2) == pytest.approx(0.5)
    assert bucket.wait_time(4) == pytest.approx(1.5)
    clock.advance(0.5)
    assert bucket.wait_time(2) == pytest.approx(0.0)
    assert bucket.allow(2)


def test_wait_time_consumes_nothing():
    bucket, _ = make(rate=1, capacity=2)
    bucket.wait_time(1)
    bucket.wait_time(2)
    assert bucket.tokens == pytest.approx(2.0)


@pytest.mark.parametrize(("rate", "capacity"), [(0, 5), (-1, 5), (1, 0), (1, -2)])
def test_invalid_construction(rate, capacity):
    with pytest.raises(ValueError):
        TokenBucket(rate, capacity, clock=FakeClock())


def test_invalid_cost():
    bucket, _ = make(rate=1, capacity=3)
    for cost in (0, -1, 3.5):
        with pytest.raises(ValueError):
            bucket.allow(cost)
        with pytest.raises(ValueError):
            bucket.wait_time(cost)
    assert bucket.tokens == pytest.approx(3.0)


def test_cost_equal_to_capacity_is_valid():
    bucket, clock = make(rate=1, capacity=3)
    assert bucket.allow(3)
    assert not bucket.allow(3)
    clock.advance(3)
    assert bucket.allow(3)
