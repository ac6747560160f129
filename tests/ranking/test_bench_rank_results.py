"""benchmarks/bench_rank.py's results file: rows written as measured, read back for --resume / --from-results."""
import math

import numpy as np


def _row(method, family, ndcg5, cost, **extra):
    return dict(method=method, family=family, ndcg5=ndcg5, p5=0.2, cost=cost, fit_time=np.nan, **extra)


def test_rows_survive_a_stop_and_a_resume(bench, tmp_path):
    path = tmp_path / "r.jsonl"
    rows = bench.Rows(str(path))
    rows.note("run", description="d", n_train=1, n_valid=1, n_test=1, n_features=2, rounds=3, depth=4, threads=1)
    rows.append(_row("GBRT LambdaMART", "GBRT LambdaMART", np.float64(0.9), 100.0, trees=np.int64(7)))
    rows.append(_row("Early Exit per query (s=0)", "Early Exit (per query)", 0.89, 50.0, s=0.0, val_ndcg5=np.nan))
    rows.note("timing", rounds=3, depth=4, threads=1, repeats=1, n_docs=10, n_features=2, gm_wall=2.0, gm_cpu=1.0,
              lgb_wall=4.0, lgb_cpu=2.0, load=0.5)
    # a part redone after a stop writes its row again: the later one is the one read back
    rows.append(_row("Early Exit per query (s=0)", "Early Exit (per query)", 0.88, 40.0, s=0.0, val_ndcg5=0.87))
    back = bench.Rows(str(path), resume=True)
    assert [r["method"] for r in back] == ["GBRT LambdaMART", "Early Exit per query (s=0)"]
    assert back[0]["trees"] == 7 and back[0]["ndcg5"] == 0.9
    assert math.isnan(back[0]["fit_time"])                      # NaN written as null, read back as NaN
    assert back[1]["cost"] == 40.0 and back[1]["val_ndcg5"] == 0.87
    assert len(back.runs) == 1 and back.runs[0]["rounds"] == 3
    assert [t["gm_cpu"] / t["lgb_cpu"] for t in back.timings] == [0.5]
    assert back.has("GBRT LambdaMART") and not back.has("GBRT pointwise")
    assert back.count("Early Exit (per query)") == 1


def test_without_resume_the_file_starts_afresh(bench, tmp_path):
    path = tmp_path / "r.jsonl"
    bench.Rows(str(path)).append(_row("a", "a", 0.5, 1.0))
    assert len(bench.Rows(str(path), resume=True)) == 1
    bench.Rows(str(path))
    assert len(bench.Rows(str(path), resume=True)) == 0


def test_from_results_prints_the_headline(bench, tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    rows = bench.Rows(str(path))
    rows.append(_row("GBRT LambdaMART", "GBRT LambdaMART", 0.90, 1000.0))
    rows.append(_row("Greedy Miser LambdaMART (lambda=1e-05)", "Greedy Miser LambdaMART", 0.895, 200.0))
    rows.append(_row("Greedy Miser LambdaMART (lambda=1e-04)", "Greedy Miser LambdaMART", 0.85, 50.0))
    rows.append(_row("LightGBM CEGB lazy (tradeoff=1e-05)", "LightGBM CEGB lazy", 0.893, 400.0))
    bench.main(["--from-results", str(path)])
    out = capsys.readouterr().out
    assert "Greedy Miser LambdaMART (lambda=1e-05): NDCG@5 0.8950, cost 200.0 = 0.200 of the full" in out
    assert "skinflint / LightGBM cost = 0.500 (target <= 0.8)" in out
    # at equal NDCG@5 both ways: no CEGB model reaches 0.895; skinflint's cheapest at >= CEGB's 0.893 is 200 / 400
    assert "at NDCG@5 >= 0.8950" not in out
    assert ("at NDCG@5 >= 0.8930: skinflint's cheapest is Greedy Miser LambdaMART (lambda=1e-05) (0.8950, cost "
            "200.0); skinflint / LightGBM cost = 0.500") in out


def test_frontier_ratio_interpolates_in_log_cost(bench):
    theirs = [_row("L1", "LightGBM CEGB lazy", 0.90, 100.0), _row("L2", "LightGBM CEGB lazy", 0.92, 400.0),
              _row("L3", "LightGBM CEGB lazy", 0.89, 500.0)]                    # L3: dominated, off the frontier
    assert [r["method"] for r in bench.pareto(theirs)] == ["L1", "L2"]
    ours = [_row("a", "x", 0.91, 100.0), _row("b", "x", 0.95, 300.0)]       # b: no LightGBM point brackets it
    lines = bench.frontier_ratios(ours, theirs)
    # halfway in NDCG@5 between 100 and 400: sqrt(100 * 400) = 200 in log cost; ours costs 100 there
    assert len(lines) == 2 and "LightGBM 200.0" in lines[1] and lines[1].endswith("ratio 0.500")
    assert bench.frontier_ratios([ours[1]], theirs) == []
