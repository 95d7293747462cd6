"""prepareModel with cache files → prepareModelFromCache: hit, miss, tamper, swap, token, version, arguments."""
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gpu_driver as gd
from gpu_driver import ErrorStatus
from gpu_driver.hal import boot_time_ns

from .conftest import chain_model, file_bytes, model_input, new_files, put_bytes, token


def _prepare_saved(device, model, tok):
    mc, dc = new_files()
    pm = device.prepare_model(model, model_cache=mc, data_cache=dc, token=tok)
    return pm, mc, dc


def _status(fn):
    with pytest.raises(gd.DriverError) as err:
        fn()
    return err.value.status


def _out(pm, size=64):
    return pm.execute([model_input(size)])[0]


@pytest.fixture(scope="module")
def saved(device):
    """One model prepared with caching: (device, token, model-cache bytes, data-cache bytes, expected)."""
    model = chain_model(6)
    tok = token()
    pm, mc, dc = _prepare_saved(device, model, tok)
    return device, tok, file_bytes(mc[0]), file_bytes(dc[0]), _out(pm)


def _from_bytes(device, tok, model_bytes, data_bytes):
    mc, dc = new_files()
    put_bytes(mc[0], model_bytes)
    put_bytes(dc[0], data_bytes)
    return device.prepare_model_from_cache(mc, dc, tok)


def test_cache_counts(device):
    n_model, n_data = device.get_number_of_cache_files_needed()
    assert n_model >= 1 and n_data >= 1


def test_hit_gives_identical_outputs(saved):
    device, tok, mb, db, expected = saved
    assert mb and db
    pm = _from_bytes(device, tok, mb, db)
    out = _out(pm)
    assert out.dtype == expected.dtype and out.tobytes() == expected.tobytes()


def test_hit_with_raw_descriptors_and_odd_positions(device):
    model, tok = chain_model(3, seed=5), token()
    mc, dc = new_files()
    mc[0].write(b"stale junk that must be truncated away" * 100)  # any size, any offset
    dc[0].write(b"x" * 7)
    fds = [os.dup(mc[0].fileno())], [os.dup(dc[0].fileno())]
    try:
        cold = device.prepare_model(model, model_cache=fds[0], data_cache=fds[1], token=tok)
        os.lseek(fds[0][0], 13, os.SEEK_SET)
        os.lseek(fds[1][0], 999, os.SEEK_SET)
        warm = device.prepare_model_from_cache(fds[0], fds[1], tok)
        assert _out(warm).tobytes() == _out(cold).tobytes()
        assert b"stale junk" not in file_bytes(mc[0])
    finally:
        for fd in (*fds[0], *fds[1]):
            os.close(fd)


def test_miss_empty_files(device):
    mc, dc = new_files()
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, token())) == ErrorStatus.GENERAL_FAILURE


def test_no_cache_files_writes_nothing(device):
    model, tok = chain_model(2), token()
    pm = device.prepare_model(model, token=tok)  # no files: nothing saved, token ignored
    mc, dc = new_files()
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, tok)) == ErrorStatus.GENERAL_FAILURE
    assert file_bytes(mc[0]) == b"" and file_bytes(dc[0]) == b""
    assert _out(pm).shape == (64,)


def _mutated(data, blob: bytes) -> bytes:
    """A hypothesis-chosen damage of ``blob``: a flipped byte, a truncation, or appended garbage."""
    kind = data.draw(st.sampled_from(["flip", "truncate", "append"]))
    if kind == "flip":
        i = data.draw(st.integers(0, len(blob) - 1))
        return blob[:i] + bytes([blob[i] ^ data.draw(st.integers(1, 255))]) + blob[i + 1:]
    if kind == "truncate":
        return blob[:data.draw(st.integers(0, len(blob) - 1))]
    return blob + data.draw(st.binary(min_size=1, max_size=64))


@pytest.mark.parametrize("side", ["model", "data"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tampered_cache_is_refused(saved, side, data):
    device, tok, mb, db, _ = saved
    if side == "model":
        mb = _mutated(data, mb)
    else:
        db = _mutated(data, db)
    assert _status(lambda: _from_bytes(device, tok, mb, db)) == ErrorStatus.GENERAL_FAILURE


def test_normal_prepare_still_works_after_refusals(saved):
    device, tok, mb, db, expected = saved
    assert _status(lambda: _from_bytes(device, tok, mb[:-1], db)) == ErrorStatus.GENERAL_FAILURE
    pm = device.prepare_model(chain_model(6))
    assert _out(pm).tobytes() == expected.tobytes()
    assert _out(_from_bytes(device, tok, mb, db)).tobytes() == expected.tobytes()  # the good cache still loads


def test_swapped_files(saved):
    device, tok, mb, db, _ = saved
    assert _status(lambda: _from_bytes(device, tok, db, mb)) == ErrorStatus.GENERAL_FAILURE
    assert _status(lambda: _from_bytes(device, tok, mb, mb)) == ErrorStatus.GENERAL_FAILURE
    assert _status(lambda: _from_bytes(device, tok, db, db)) == ErrorStatus.GENERAL_FAILURE


def test_files_of_another_model(saved):
    device, tok, mb, db, _ = saved
    other_tok = token()
    _, mc2, dc2 = _prepare_saved(device, chain_model(6, seed=99), other_tok)
    mb2, db2 = file_bytes(mc2[0]), file_bytes(dc2[0])
    # another model's data cache (same structure, other constants): refused, not wrong values
    assert _status(lambda: _from_bytes(device, tok, mb, db2)) == ErrorStatus.GENERAL_FAILURE
    # another model's model cache under this token
    assert _status(lambda: _from_bytes(device, tok, mb2, db2)) == ErrorStatus.GENERAL_FAILURE
    assert _status(lambda: _from_bytes(device, other_tok, mb, db)) == ErrorStatus.GENERAL_FAILURE
    assert _from_bytes(device, other_tok, mb2, db2) is not None


def test_wrong_token(saved):
    device, tok, mb, db, _ = saved
    wrong = bytes([tok[0] ^ 1]) + tok[1:]
    assert _status(lambda: _from_bytes(device, wrong, mb, db)) == ErrorStatus.GENERAL_FAILURE


def test_forged_cache_for_a_known_token(device):
    """A well-formed cache the driver did not write for this token (e.g. re-saved elsewhere) is refused."""
    tok = token()
    _, mc, dc = _prepare_saved(device, chain_model(2), tok)
    state = device.cache_state_dir
    device.cache_state_dir = state / "elsewhere"  # another driver state: another record for the same token
    try:
        _, mc2, dc2 = _prepare_saved(device, chain_model(2, seed=3), tok)
    finally:
        device.cache_state_dir = state
    assert _status(lambda: device.prepare_model_from_cache(mc2, dc2, tok)) == ErrorStatus.GENERAL_FAILURE
    device.prepare_model_from_cache(mc, dc, tok)


def test_driver_version_invalidates(device, monkeypatch):
    model, tok = chain_model(2), token()
    _, mc, dc = _prepare_saved(device, model, tok)
    monkeypatch.setattr(gd.version, "__version__", "999.0.0")
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, tok)) == ErrorStatus.GENERAL_FAILURE
    _, mc, dc = _prepare_saved(device, model, tok)  # the upgraded driver writes its own cache
    device.prepare_model_from_cache(mc, dc, tok)
    monkeypatch.undo()
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, tok)) == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("counts", [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0)])
def test_wrong_file_counts(saved, counts):
    device, tok, mb, db, _ = saved
    mc, dc = new_files(*counts)
    for f in mc:
        put_bytes(f, mb)
    for f in dc:
        put_bytes(f, db)
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, tok)) == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("bad", [b"", b"short", bytes(31), bytes(33), "x" * 32, None])
def test_bad_token(saved, bad):
    device, tok, mb, db, _ = saved
    mc, dc = new_files()
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, bad)) == ErrorStatus.INVALID_ARGUMENT


def test_non_file_handles(saved, tmp_path):
    device, tok, mb, db, _ = saved
    import io

    r, w = os.pipe()
    closed = new_files()[0][0]
    closed.close()
    dir_fd = os.open(tmp_path, os.O_RDONLY)
    try:
        mc, dc = new_files()
        for bad in (io.BytesIO(mb), r, -1, 10_000, closed, "file.bin", dir_fd, 3.5):
            status = _status(lambda: device.prepare_model_from_cache([bad], dc, tok))
            assert status == ErrorStatus.INVALID_ARGUMENT, bad
    finally:
        for fd in (r, w, dir_fd):
            os.close(fd)


def test_read_only_handle_refused_for_saving_not_for_preparing(saved, tmp_path):
    device, tok, mb, db, expected = saved
    path = tmp_path / "ro.bin"
    path.write_bytes(b"")
    with open(path, "rb") as ro:
        mc, dc = new_files()
        pm = device.prepare_model(chain_model(6), model_cache=[ro], data_cache=dc, token=token())
        assert _out(pm).tobytes() == expected.tobytes()  # saving failed silently, preparation did not
        assert path.read_bytes() == b""


def test_deadline(saved):
    device, tok, mb, db, _ = saved
    mc, dc = new_files()
    put_bytes(mc[0], mb)
    put_bytes(dc[0], db)
    assert (_status(lambda: device.prepare_model_from_cache(mc, dc, tok, deadline=1))
            == ErrorStatus.MISSED_DEADLINE_PERSISTENT)
    assert _status(lambda: device.prepare_model_from_cache(mc, dc, tok, deadline=-3)) == ErrorStatus.INVALID_ARGUMENT
    device.prepare_model_from_cache(mc, dc, tok, deadline=boot_time_ns() + 60_000_000_000)


def test_overwrite_with_another_model_same_files(device):
    """Re-saving into the same files (same token) replaces both the content and the record."""
    tok = token()
    mc, dc = new_files()
    device.prepare_model(chain_model(2, seed=1), model_cache=mc, data_cache=dc, token=tok)
    cold = device.prepare_model(chain_model(5, seed=2), model_cache=mc, data_cache=dc, token=tok)
    warm = device.prepare_model_from_cache(mc, dc, tok)
    assert _out(warm).tobytes() == _out(cold).tobytes()
    assert len(warm.model.main.operations) == 5


def test_device_without_caching_reports_zero(tmp_path):
    from gpu_driver.reference.device import ReferenceDevice

    class NoCache(ReferenceDevice):
        caches_compilations = False

    dev = NoCache()
    assert dev.get_number_of_cache_files_needed() == (0, 0)
    mc, dc = new_files()
    assert _status(lambda: dev.prepare_model_from_cache(mc, dc, token())) == ErrorStatus.GENERAL_FAILURE
    assert _status(lambda: dev.prepare_model(chain_model(1), model_cache=mc, data_cache=dc, token=token())) \
        == ErrorStatus.INVALID_ARGUMENT


def test_from_cache_compiles_nothing(saved, monkeypatch):
    device, tok, mb, db, expected = saved

    def no_compile(*a, **k):
        raise AssertionError("prepare_model_from_cache prepared or compiled something")

    # no device runs its normal preparation from the cache; accelerators compile nothing either
    monkeypatch.setattr(type(device), "_prepare", no_compile)  # on the class: undo leaves no instance attribute
    backend = getattr(device, "backend", None)
    if backend is not None:
        monkeypatch.setattr(backend.compiler, "compile", no_compile)
        import gpu_driver.accelerator.prepared_model as accelerator_prepared_model

        monkeypatch.setattr(accelerator_prepared_model, "compile_model", no_compile)
    assert _out(_from_bytes(device, tok, mb, db)).tobytes() == expected.tobytes()
