"""MaskQueue: buffers are never rewritten while in flight, device data equals what was written,
misuse raises clear errors, and sharded placement over 8 fake CPU devices (in a subprocess)."""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fake_devices import run_with_8_cpu_devices

from jaxguide.device.mask_queue import MaskQueue


class Producer:
    """Drives a queue like a decode loop and records what every device array must hold."""

    def __init__(self, queue: MaskQueue, seed: int):
        self.queue = queue
        self.rng = np.random.default_rng(seed)
        self.sent: list[tuple[jax.Array, np.ndarray]] = []
        self.last_array_of: dict[int, jax.Array] = {}  # id(buffer) -> last array made from it
        self.held: list[np.ndarray] = []

    def acquire(self) -> np.ndarray:
        buffer = self.queue.acquire()
        assert buffer.flags.writeable and buffer.flags.c_contiguous
        assert buffer.dtype == np.uint32
        assert buffer.shape == (self.queue.local_batch_size, self.queue.width)
        assert all(buffer is not other for other in self.held), "buffer handed out twice"
        previous = self.last_array_of.get(id(buffer))
        if previous is not None:
            assert previous.is_ready(), "buffer handed out while its transfer is in flight"
        self.held.append(buffer)
        return buffer

    def fill_and_submit(self, buffer: np.ndarray) -> None:
        buffer[...] = self.rng.integers(0, 2**32, size=buffer.shape, dtype=np.uint32)
        expected = buffer.copy()
        array = self.queue.submit(buffer)
        self.held = [b for b in self.held if b is not buffer]
        self.last_array_of[id(buffer)] = array
        self.sent.append((array, expected))

    def put(self) -> None:
        mask = self.rng.integers(0, 2**32, size=(self.queue.local_batch_size, self.queue.width),
                                 dtype=np.uint32)
        self.sent.append((self.queue.put(mask), mask.copy()))
        mask[...] = 0  # put() copied it: rewriting the caller's array changes nothing

    def check_all(self) -> None:
        for array, expected in self.sent:
            assert array.shape == (self.queue.batch_size, self.queue.width)
            assert array.dtype == np.uint32
            np.testing.assert_array_equal(np.asarray(array), expected)


@pytest.mark.parametrize("num_buffers", [1, 2, 3])
def test_device_data_equals_what_was_written_across_reuse(num_buffers):
    queue = MaskQueue(batch_size=16, width=7, num_buffers=num_buffers)
    producer = Producer(queue, seed=num_buffers)
    for _ in range(40):
        producer.fill_and_submit(producer.acquire())
    producer.check_all()  # every earlier array still holds its own step's data
    assert len(producer.sent) == 40


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_buffers=st.integers(1, 4), batch=st.integers(1, 9), width=st.integers(1, 6),
       ops=st.lists(st.sampled_from(["acquire", "submit", "put", "drain"]), max_size=40),
       seed=st.integers(0, 2**16))
def test_random_operation_sequences_keep_the_contract(num_buffers, batch, width, ops, seed):
    queue = MaskQueue(batch, width, num_buffers=num_buffers)
    producer = Producer(queue, seed)
    for op in ops:
        if op == "acquire":
            if len(producer.held) == num_buffers:
                with pytest.raises(RuntimeError, match="none was submitted"):
                    queue.acquire()
            else:
                producer.acquire()
        elif op == "submit" and producer.held:
            producer.fill_and_submit(producer.held[0])
        elif op == "put" and len(producer.held) < num_buffers:
            producer.put()
        elif op == "drain":
            queue.drain()
            assert queue.in_flight == 0
        assert queue.in_flight + len(producer.held) <= num_buffers
    producer.check_all()


def test_acquire_with_every_buffer_in_flight_returns_the_oldest():
    queue = MaskQueue(batch_size=4, width=3, num_buffers=3)
    buffers, arrays = [], []
    for step in range(3):
        buffer = queue.acquire()
        buffer[...] = step
        buffers.append(buffer)
        arrays.append(queue.submit(buffer))
    assert queue.in_flight == 3
    again = queue.acquire()
    assert again is buffers[0] and arrays[0].is_ready()
    assert np.all(again == 0)  # previous contents are kept; the caller rewrites the rows
    again[...] = 9
    queue.submit(again)
    assert int(np.asarray(arrays[0])[0, 0]) == 0


def test_buffers_come_back_in_round_robin_order():
    queue = MaskQueue(batch_size=2, width=1, num_buffers=3)
    first = [queue.acquire() for _ in range(3)]
    order = []
    for buffer in (first[1], first[0], first[2]):  # submitted out of acquisition order
        queue.submit(buffer)
    for _ in range(6):
        buffer = queue.acquire()
        order.append(next(i for i, b in enumerate(first) if b is buffer))
        queue.submit(buffer)
    assert order == [1, 0, 2, 1, 0, 2]  # oldest submission first


def test_submitted_buffer_is_read_only_until_reacquired():
    queue = MaskQueue(batch_size=2, width=2, num_buffers=1)
    buffer = queue.acquire()
    buffer[...] = 5
    array = queue.submit(buffer)
    with pytest.raises(ValueError, match="read-only"):
        buffer[0, 0] = 1
    assert queue.acquire() is buffer and buffer.flags.writeable
    buffer[0, 0] = 1
    np.testing.assert_array_equal(np.asarray(array), np.full((2, 2), 5, np.uint32))


def test_buffers_are_64_byte_aligned():
    queue = MaskQueue(batch_size=3, width=5, num_buffers=4)
    held = [queue.acquire() for _ in range(4)]
    assert all(buffer.ctypes.data % 64 == 0 for buffer in held)


def test_misuse_raises_clear_errors():
    queue = MaskQueue(batch_size=4, width=2, num_buffers=2)
    other = MaskQueue(batch_size=4, width=2, num_buffers=2)
    buffer = queue.acquire()
    with pytest.raises(ValueError, match="not a copy, view or slice"):
        queue.submit(buffer.copy())
    with pytest.raises(ValueError, match="not a copy, view or slice"):
        queue.submit(buffer[:])
    with pytest.raises(ValueError, match="not a copy, view or slice"):
        queue.submit(other.acquire())
    with pytest.raises(ValueError, match="not a copy, view or slice"):
        queue.submit(np.zeros((4, 2), np.uint32))
    queue.submit(buffer)
    with pytest.raises(ValueError, match="in flight, not acquired"):
        queue.submit(buffer)
    held = queue.acquire()
    held2 = queue.acquire()  # waits for `buffer`, whose transfer is done
    assert held2 is buffer
    with pytest.raises(RuntimeError, match="none was submitted"):
        queue.acquire()
    held.shape = (8, 1)
    with pytest.raises(ValueError, match="must stay uint32"):
        queue.submit(held)
    held.shape = (4, 2)
    queue.submit(held)
    queue.submit(held2)
    with pytest.raises(TypeError, match="uint32"):
        queue.put(np.zeros((4, 2), np.int32))
    with pytest.raises(TypeError, match="uint32"):
        queue.put([[0, 0]] * 4)
    with pytest.raises(ValueError, match=r"\(4, 2\)"):
        queue.put(np.zeros((4, 3), np.uint32))
    queue.drain()
    assert queue.in_flight == 0
    for kwargs in ({"batch_size": 0, "width": 2}, {"batch_size": 2, "width": 0},
                   {"batch_size": 2, "width": 2, "num_buffers": 0},
                   {"batch_size": 2.0, "width": 2}, {"batch_size": True, "width": 2}):
        with pytest.raises(ValueError):
            MaskQueue(**kwargs)
    with pytest.raises(TypeError, match="Sharding"):
        MaskQueue(2, 2, sharding=jax.devices()[0])


def test_donated_mask_array_is_reported():
    queue = MaskQueue(batch_size=2, width=2, num_buffers=1)
    array = queue.submit(queue.acquire())
    consume = jax.jit(lambda x: x + 1, donate_argnums=0)
    consume(array).block_until_ready()
    if not array.is_deleted():
        pytest.skip("this backend does not honour donation")
    with pytest.raises(RuntimeError, match="donate"):
        queue.acquire()


SHARDED_SCRIPT = textwrap.dedent("""
    import json
    import jax, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxguide.device.mask_queue import MaskQueue
    from jaxguide.device.sampling import Greedy, sample

    assert jax.device_count() == 8, jax.devices()
    result = {}
    rng = np.random.default_rng(0)
    layouts = {
        "rows_8": (jax.make_mesh((8,), ("data",)), P("data")),
        "rows_4_replicated_2": (jax.make_mesh((4, 2), ("data", "model")), P("data")),
        "replicated": (jax.make_mesh((8,), ("data",)), P()),
        "columns_8": (jax.make_mesh((8,), ("data",)), P(None, "data")),
    }
    for name, (mesh, spec) in layouts.items():
        sharding = NamedSharding(mesh, spec)
        queue = MaskQueue(batch_size=64, width=16, num_buffers=2, sharding=sharding)
        ok = queue.local_batch_size == 64 and list(queue.global_rows) == list(range(64))
        sent = []
        for step in range(6):
            buf = queue.acquire()
            buf[...] = rng.integers(0, 2**32, size=buf.shape, dtype=np.uint32)
            sent.append((queue.submit(buf), buf.copy()))
        for array, expected in sent:
            ok &= array.sharding == sharding
            ok &= bool(np.array_equal(np.asarray(array), expected))
            for shard in array.addressable_shards:
                ok &= bool(np.array_equal(np.asarray(shard.data), expected[shard.index]))
        result[name] = bool(ok)

    # Feeding the sampler: a batch-sharded greedy step on queued masks equals numpy.
    mesh = jax.make_mesh((8,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    queue = MaskQueue(batch_size=32, width=4, sharding=rows)
    step = jax.jit(lambda logits, mask: sample(logits, mask, None, Greedy()))
    ok = True
    for i in range(4):
        logits = rng.normal(size=(32, 100)).astype(np.float32)
        buf = queue.acquire()
        buf[...] = rng.integers(0, 2**32, size=buf.shape, dtype=np.uint32)
        mask = queue.submit(buf)
        bits = np.unpackbits(buf.view(np.uint8), axis=1, bitorder="little")[:, :100] > 0
        want = np.where(bits.any(1), np.where(bits, logits, -np.inf).argmax(1), -1)
        got = step(jax.device_put(logits, rows), mask)
        ok &= bool(np.array_equal(np.asarray(got), want))
    result["sampler"] = bool(ok)

    try:
        MaskQueue(batch_size=60, width=4, sharding=rows)
        result["indivisible_rejected"] = False
    except ValueError as e:
        result["indivisible_rejected"] = "cannot place" in str(e)
    print("RESULT " + json.dumps(result))
""")


def test_sharded_placement_over_8_devices():
    result = run_with_8_cpu_devices(SHARDED_SCRIPT)
    assert result == {"rows_8": True, "rows_4_replicated_2": True, "replicated": True,
                      "columns_8": True, "sampler": True, "indivisible_rejected": True}
