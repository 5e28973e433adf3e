"""Secrets and Dask (issue 23, item 4): a lane sent over a plain ``tcp://`` scheduler carries the
names of its secrets, never their values (pickled, as Dask sends it); the worker takes them from its
own environment and plans the same keys; a missing one is a configuration error naming it.
``tls://`` and the LocalCluster ship them."""

from __future__ import annotations

import json
import pickle

import pytest

from fvp_harness.batch.dask import DaskExecutor
from fvp_harness.errors import ConfigurationError
from fvp_harness.run.lanes import WITHHELD, JobSpec, LaneSpec, restore_secrets, withhold_secrets
from fvp_harness.run.plan import build_plan
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO

TOKEN = "tok-3f9a1c77e2b4d5"
CERT_LINES = ["-----BEGIN CERTIFICATE-----", "MIIBszCCAVmgAwIBAgIUQ2h1bmsx",
              "-----END CERTIFICATE-----"]
CERT = "\n".join(CERT_LINES)


def _lane() -> tuple[LaneSpec, dict[str, str]]:
    loaded = load_scenario(REPO / "scenarios" / "smoke.yaml", [
        f"run.env.API_TOKEN={TOKEN}", f"vars.cert={json.dumps(CERT)}",
        "builds.after.env.SERVER_CERT=${vars.cert}", "builds.after.secret_env=[SERVER_CERT]"],
                           check_files=False)
    plan = build_plan(loaded)
    job = JobSpec(0, plan.scenario, str(loaded.path), plan.profile, 0,
                  tuple(u.id for u in plan.units), tuple(u.key for u in plan.units))
    return LaneSpec(0, "pool", (job,)), {"API_TOKEN": TOKEN, "SERVER_CERT": CERT}


def test_a_lane_for_a_plain_tcp_scheduler_pickles_without_any_secret_value():
    lane, _environ = _lane()
    assert TOKEN.encode() in pickle.dumps(lane)  # the value is there before withholding
    shipped = DaskExecutor(scheduler="tcp://127.0.0.1:8786").shipped(lane)
    data = pickle.dumps(shipped)
    for text in (TOKEN, CERT, *CERT_LINES[1:2]):
        assert text.encode() not in data, text
    (job,) = shipped.jobs
    assert set(job.withheld) == {("run", "API_TOKEN"), ("builds.after", "SERVER_CERT")}
    assert (job.scenario.run.env["API_TOKEN"] == WITHHELD and
            job.scenario.builds["after"].env["SERVER_CERT"] == WITHHELD)


def test_tls_and_the_local_cluster_ship_the_lane_as_it_is():
    lane, _environ = _lane()
    assert DaskExecutor(scheduler="tls://head:8786").shipped(lane) is lane
    assert DaskExecutor().shipped(lane) is lane


def test_the_worker_restores_secrets_from_its_environment_and_plans_the_same_keys():
    lane, environ = _lane()
    restored = restore_secrets(withhold_secrets(lane), {**environ, "OTHER": "x"})
    (job,), (original,) = restored.jobs, lane.jobs
    assert job.withheld == () and job.scenario.run.env == original.scenario.run.env
    assert job.scenario.builds["after"].env == original.scenario.builds["after"].env
    loaded = load_scenario(REPO / "scenarios" / "smoke.yaml", check_files=False)
    again = build_plan(loaded.__class__(job.scenario, loaded.path, loaded.profile, loaded.files,
                                        ()))
    assert tuple(unit.key for unit in again.units) == original.keys


def test_a_worker_without_the_secret_refuses_the_lane_naming_it():
    lane, _environ = _lane()
    with pytest.raises(ConfigurationError,
                       match=r"API_TOKEN, SERVER_CERT are not sent to Dask workers") as info:
        restore_secrets(withhold_secrets(lane), {})
    assert info.value.exit_code == 2 and TOKEN not in str(info.value)
