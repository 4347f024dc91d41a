"""checker.running.cuda_probe: whether CUDA starts inside the worker's walls, and what grading does when not.

On a real H200 every CUDA item of every submission, the reference's too, failed with the driver's error
304 inside the worker while the trusted side saw the GPU: each student would have lost those points for
hwcheck's own walls. Here the trusted side is told there is a GPU (`cuda_available` answers yes) on a
machine whose torch has no CUDA, so a real walled worker really fails to compute on the GPU; the grader
must then skip the CUDA items with that reason (worth 0, as on a machine without a GPU), keep every other
item, and name the gap in `grader.isolation`, where the batch's summary shows missing walls.
"""
import pytest

from checker.running import runner
from checker.running.cuda_probe import cuda_in_walls
from checker.running.plugin import cuda_available
from checker.running.runner import Grader
from checker.running.zygote_client import Zygote
from checker.spec import load_spec, reference_file

needs_no_cuda = pytest.mark.skipif(cuda_available(), reason="CUDA is here: the probe's failure cannot be arranged")


@needs_no_cuda
def test_the_probe_names_why_a_walled_worker_cannot_compute_on_the_gpu():
    with Zygote() as z:
        why = cuda_in_walls(z)
    assert isinstance(why, str) and "cuda" in why.lower(), why


@needs_no_cuda
def test_cuda_items_are_skipped_with_the_reason_when_cuda_does_not_start_in_the_walls(monkeypatch):
    monkeypatch.setattr(runner, "cuda_available", lambda: True)  # the trusted side "sees" a GPU
    with Grader(mode="public") as g:
        card = g.grade(_reference("vit"), "vit")
        second = g.grade(_reference("vit"), "vit")
        assert isinstance(g.cuda_state(), str)
    for c in (card, second):
        cuda = [t for q in c["questions"] for t in q["tests"] if t["device"] == "cuda"]
        assert cuda
        assert all(t["outcome"] == "skipped" and "does not start inside the grader's walls" in t["message"]
                   and t["max_points"] == 0 for t in cuda), [t["message"] for t in cuda][:3]
        assert c["score"] == c["max_score"]  # the CPU items all ran, and passed
        assert "cuda-unavailable-in-walls" in c["grader"]["isolation"]


@needs_no_cuda
def test_no_probe_where_no_gpu_is_seen(monkeypatch):
    asked = []
    monkeypatch.setattr("checker.running.cuda_probe.cuda_in_walls", lambda *a, **k: asked.append(1))
    with Grader(mode="public") as g:
        card = g.grade(_reference("vit"), "vit")
    assert not asked
    assert "cuda-unavailable-in-walls" not in card["grader"]["isolation"]
    cuda = [t for q in card["questions"] for t in q["tests"] if t["device"] == "cuda"]
    assert cuda and all("CUDA is not available on this machine" in t["message"] for t in cuda)


def _reference(aid):
    return reference_file(load_spec(aid))  # assignments/<id>/reference.py
