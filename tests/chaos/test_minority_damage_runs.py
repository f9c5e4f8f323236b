"""The minority-damage scenarios against a real cluster, one short seed each:
a follower's copy of the workload's partition 0 bit-flipped and cut short
while it is down (killed, or cleanly stopped), its leader killed as it
rejoins, leaders killed besides. Nothing acknowledged may be lost, no read
may meet a batch whose CRC fails, and the damaged replica never leads with
a shorter or corrupt log (it would lose acknowledged writes or serve the
corrupt batch: both are checked)."""
from __future__ import annotations

import pytest

from chaos.history import read_history
from chaos.minority_damage import MINORITY_FAULTS
from chaos.runner import RunSettings, run


@pytest.mark.parametrize("scenario", ["minority-damage", "minority-damage-clean"])
def test_a_damaged_follower_never_costs_a_write_nor_serves_its_damage(tmp_path, scenario) -> None:
    result = run(RunSettings(scenario, 7, 30.0, tmp_path, network=False))
    summary = result.summary
    assert summary["valid"], (summary["anomalies"], summary["notes"])
    assert summary["anomalies"]["lost"] == 0 and summary["corrupt_reads"] == 0, summary
    assert summary["linearizable"] != "illegal", summary
    assert summary["sends"]["ok"] > 100 and summary["final_records"] >= summary["sends"]["ok"], summary
    damage = [line["value"] for line in read_history(tmp_path / "history.jsonl")
              if line["process"] == "nemesis" and line["f"] in MINORITY_FAULTS and line["value"]["phase"] == "start"]
    # seed 7 draws both damages (and a kill); each hit a follower's stored batches, recorded
    assert {d["stop"] for d in damage} == {"kill" if scenario == "minority-damage" else "stop"}
    done = [d for d in damage if d["damaged"]]
    assert done and all(d["follower"] != d["leader"] for d in done), damage
    assert all(d["file"].endswith(".log") and ("position" in d or d["bytes_cut"] > 0) for d in done), damage
    if scenario == "minority-damage":
        # killed: the restart's recovery checked every batch and cut the log where the damage starts
        for d in done:
            if d.get("position") is not None or d.get("mid_batch"):
                node_log = (tmp_path / "logs" / f"node-{d['follower']}.log").read_text(errors="replace")
                assert "chaos-0: recovery truncated" in node_log, d
