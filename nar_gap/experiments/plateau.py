"""Where validation flattens: the measurement a profile's step count rests on.

A claim about a trained model's score (Bellman-Ford's 87 %, §1) is about a
model trained to its plateau; the paper trains 10 000 steps.  A CPU profile
cannot, so it must train at least to where validation stops rising, and the
step count it picks must be a measurement, not a guess.  This trains a
baseline configuration past any plausible plateau, validating every
``eval_every`` steps from step 0, and writes each horizon's verdict by the
same rule the paper-vs-ours check applies (:func:`nar_gap.analysis.verdicts.plateau`:
a slope test over the evaluations in the last half of the horizon, the change
it projects over the last quarter inside the tolerance).

The validation history of a longer run is that of every shorter one: data of
a step depend on the seed and the step alone, and validation changes nothing
training uses, so one run of ``horizon`` steps answers every shorter horizon.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nar_gap.analysis.verdicts import plateau, seed_means
from nar_gap.experiments.profiles import OutputDirs, Profile
from nar_gap.experiments.runs import baseline_config, metadata, train_once
from nar_gap.system import files
from nar_gap.training import read_validation


def plateau_file(algorithm: str, edge_info: bool = False) -> str:
    """The horizons of ``algorithm``'s baseline (or its edge-information arm)."""
    return f"plateau_{algorithm}{'_edge_info' if edge_info else ''}.csv"


def horizon_rows(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per evaluation step T: would a run of T steps be at its plateau?"""
    steps, means = seed_means((r["step"], r["val_score"]) for r in history)
    rows = []
    for k, step in enumerate(steps):
        reached, evidence = plateau(steps[: k + 1], means[: k + 1])
        rows.append(
            {
                "steps": step,
                "seed_mean_val": means[k],
                "at_plateau": reached,
                "evidence": evidence,
            }
        )
    return rows


def first_plateau(rows: Sequence[dict[str, Any]]) -> int | None:
    """The shortest horizon from which every longer one is at its plateau."""
    found = None
    for row in reversed(rows):
        if not row["at_plateau"]:
            break
        found = int(row["steps"])
    return found


def measure_plateau(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    seeds: int,
    horizon: int,
    edge_info: bool = False,
    progress: bool = True,
) -> Path:
    """Train ``seeds`` baseline seeds for ``horizon`` steps; write the horizons.

    ``results/plateau_<algorithm>[_edge_info].csv``: per evaluation step, the
    seed-mean validation score and whether a run of that many steps would be
    at its plateau; the sidecar holds the configuration and the shortest
    horizon from which every longer one is.
    """
    config = dataclasses.replace(
        baseline_config(profile, algorithm, edge_info),
        seeds=profile.seed_list(seeds),
        steps=horizon,
        checkpoint_every=max(profile.eval_every, horizon // 4),
    )
    run = train_once(config, dirs.runs, progress)
    rows = horizon_rows(read_validation(run.out_dir))
    return files.write_table(
        Path(dirs.results) / plateau_file(algorithm, edge_info),
        rows,
        metadata(profile, config=config.to_dict(), plateau_from=first_plateau(rows)),
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Measure a plateau from the command line.

    ``python -m nar_gap.experiments.plateau [--edge-info] ALGORITHM SEEDS HORIZON``
    """
    import argparse

    from nar_gap.experiments import profiles

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("algorithm")
    parser.add_argument("seeds", type=int)
    parser.add_argument("horizon", type=int)
    parser.add_argument("--edge-info", action="store_true")
    parser.add_argument("--profile", default=profiles.DEFAULT_PROFILE)
    args = parser.parse_args(argv)
    profile = profiles.get(args.profile)
    written = measure_plateau(
        profile,
        args.algorithm,
        profiles.output_dirs(args.profile),
        args.seeds,
        args.horizon,
        args.edge_info,
    )
    found = files.read_json(files.sidecar_path(written))["plateau_from"]
    print(f"wrote {written}; at its plateau from step {found}")


if __name__ == "__main__":
    main()
