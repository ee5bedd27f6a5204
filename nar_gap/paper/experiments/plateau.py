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
Notebook 02 measures it for the arms ``Profile.studies.plateaus`` names: at
``cpu`` on its own baseline runs (no step trained again), at ``studies`` to
1 000 steps, continuing them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nar_gap.analysis.verdicts import first_plateau, plateau_horizons
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import baseline_config, metadata, run_dir
from nar_gap.system import files
from nar_gap.training import TrainConfig, read_validation, train
from nar_gap.training.run_dir import CONFIG_FILE, continue_from


def plateau_file(algorithm: str, edge_info: bool = False) -> str:
    """The horizons of ``algorithm``'s baseline (or its edge-information arm)."""
    return f"plateau_{algorithm}{'_edge_info' if edge_info else ''}.csv"


def plateau_config(
    profile: Profile, algorithm: str, edge_info: bool, horizon: int
) -> TrainConfig:
    """The baseline arm trained to ``horizon`` steps (0: its own steps)."""
    baseline = baseline_config(profile, algorithm, edge_info)
    return dataclasses.replace(baseline, steps=horizon or baseline.steps)


def measure_plateau(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    horizon: int = 0,
    edge_info: bool = False,
    progress: bool = True,
) -> Path:
    """The baseline arm's horizons up to ``horizon`` steps; the table written.

    ``results/plateau_<algorithm>[_edge_info].csv``: per evaluation step, the
    seed-mean validation score and whether a run of that many steps would be
    at its plateau; the sidecar holds the configuration and the shortest
    horizon from which every longer one is.  At the baseline's own steps
    (``horizon`` 0) this reads notebook 02's run; a longer horizon continues
    that run where it has finished (a straight run, resumed: the same
    numbers), so its first steps are not trained twice.
    """
    config = plateau_config(profile, algorithm, edge_info, horizon)
    out = run_dir(config, dirs.runs)
    baseline = run_dir(baseline_config(profile, algorithm, edge_info), dirs.runs)
    if out != baseline and (baseline / CONFIG_FILE).is_file():
        continue_from(baseline, config, out)
    run = train(config, out, progress=progress)
    rows = plateau_horizons(read_validation(run.out_dir))
    return files.write_table(
        Path(dirs.results) / plateau_file(algorithm, edge_info),
        rows,
        metadata(profile, config=config.to_dict(), plateau_from=first_plateau(rows)),
    )


def measure_profile_plateaus(
    profile: Profile, dirs: OutputDirs, progress: bool = True
) -> list[str]:
    """Notebook 02's plateau section: every arm ``Profile.studies`` names.

    Returns the tables' names; reading (``dirs.reading``), those written.
    """
    names = []
    for algorithm, edge_info, horizon in profile.studies.plateaus:
        if not dirs.reading:
            measure_plateau(profile, algorithm, dirs, horizon, edge_info, progress)
        names.append(plateau_file(algorithm, edge_info))
    return names


def stored_plateau_from(table: str | Path) -> int | None:
    """The shortest horizon at its plateau that a finished measurement wrote."""
    return files.read_json(files.sidecar_path(table))["plateau_from"]
