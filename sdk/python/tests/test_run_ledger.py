from __future__ import annotations

from jobwheel.run_ledger import Kind, RunLedger
from jobwheel.stubs import executor_pb2, types_pb2


def test_ended_refused_and_fenced_are_remembered() -> None:
    ledger = RunLedger(recent_runs=10, fenced_runs=10)
    ledger.ended(1, types_pb2.RUN_STATUS_SUCCEEDED, "ok")
    ledger.refused(2, executor_pb2.RUN_DISPOSITION_DISCARDED, "busy")
    ledger.fence(3)
    e1, e2, e3 = ledger.find(1), ledger.find(2), ledger.find(3)
    assert e1 is not None and e1.kind is Kind.ENDED and e1.status == types_pb2.RUN_STATUS_SUCCEEDED
    assert e2 is not None and e2.kind is Kind.REFUSED
    assert e2.disposition == executor_pb2.RUN_DISPOSITION_DISCARDED
    assert e2.status == types_pb2.RUN_STATUS_DISCARDED
    assert e3 is not None and e3.kind is Kind.FENCED
    assert ledger.find(4) is None


def test_known_status_kept_over_unspecified_and_refusal_never_becomes_ended() -> None:
    ledger = RunLedger()
    ledger.ended(1, types_pb2.RUN_STATUS_FAILED, "boom")
    ledger.ended(1)
    assert ledger.find(1).status == types_pb2.RUN_STATUS_FAILED  # type: ignore[union-attr]
    ledger.refused(2, executor_pb2.RUN_DISPOSITION_REJECTED, "no handler")
    ledger.ended(2, types_pb2.RUN_STATUS_SUCCEEDED, "")
    assert ledger.find(2).kind is Kind.REFUSED  # type: ignore[union-attr]
    ledger.fence(3)
    ledger.ended(3, types_pb2.RUN_STATUS_SUCCEEDED, "")
    assert ledger.find(3).kind is Kind.FENCED  # type: ignore[union-attr]


def test_bounded_lru_keeps_largest_forgotten() -> None:
    ledger = RunLedger(recent_runs=3, fenced_runs=2)
    for i in (5, 9, 7, 8):
        ledger.ended(i, types_pb2.RUN_STATUS_SUCCEEDED, "")
    assert ledger.find(5) is None
    assert ledger.largest_forgotten == 5
    ledger.find(9)  # Used: 7 is now the least recent.
    ledger.ended(10, types_pb2.RUN_STATUS_SUCCEEDED, "")
    assert ledger.find(7) is None and ledger.find(9) is not None
    assert ledger.largest_forgotten == 7
    assert len(ledger) == 3
    # Fences have their own bound: short runs never push one out.
    ledger.fence(100)
    for i in range(200, 260):
        ledger.ended(i, types_pb2.RUN_STATUS_SUCCEEDED, "")
    assert ledger.find(100).kind is Kind.FENCED  # type: ignore[union-attr]
    ledger.fence(101)
    ledger.fence(102)
    assert ledger.find(100) is None
