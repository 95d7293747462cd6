"""The execution preference reaches the prepared model (also through the compilation cache) and
chooses how it waits for the device: LOW_POWER never busy-waits."""
import tempfile

import numpy as np

from gpu_driver.hal import ExecutionPreference as P

from .helpers import chain_model, opencl_device, reference_outputs


def test_preference_sets_the_wait_policy_and_not_the_result():
    dev = opencl_device()
    model = chain_model(4, shape=(1, 8, 8, 4))
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 4)).astype(np.float32)
    expected = reference_outputs(model, [x])[0]
    for pref, spins in ((P.LOW_POWER, False), (P.FAST_SINGLE_ANSWER, True), (P.SUSTAINED_SPEED, True)):
        pm = dev.prepare_model(model, preference=pref)
        assert pm.preference == pref and (pm.spin_ns > 0) == spins
        np.testing.assert_allclose(pm.execute([x])[0], expected, rtol=5 * 2.0 ** -23, atol=1e-5)


def test_preference_survives_the_compilation_cache():
    dev = opencl_device()
    model = chain_model(3, shape=(1, 4, 4, 2))
    with tempfile.TemporaryFile() as mc, tempfile.TemporaryFile() as dc:
        token = bytes(range(32))
        dev.prepare_model(model, preference=P.LOW_POWER, model_cache=[mc], data_cache=[dc], token=token)
        loaded = dev.prepare_model_from_cache([mc], [dc], token)
    assert loaded.preference == P.LOW_POWER and loaded.spin_ns == 0
