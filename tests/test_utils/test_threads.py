"""one_cpu_thread: one intra-op thread inside, the caller's count after."""
import pytest
import torch

from mmrazor_quant.utils.threads import one_cpu_thread


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_one_thread_inside_restored_after(two_threads):
    with one_cpu_thread(torch.device('cpu')):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_restored_after_an_error(two_threads):
    with pytest.raises(ZeroDivisionError):
        with one_cpu_thread('cpu'):
            1 / 0
    assert torch.get_num_threads() == 2


def test_other_devices_keep_the_threads(two_threads):
    with one_cpu_thread(torch.device('meta')):
        assert torch.get_num_threads() == 2
