"""A run recorded before the implementation modules became private (issue 19) still replays: DBOS
pickled its steps' results and errors under the classes' old module paths."""

from __future__ import annotations

import subprocess
import sys

from jianmu_like.testing import PATIENCE

OLD = "jianmu_like" + ".models.types"
"""Spelled in two parts so that dev/apply_renames.py leaves it as it is."""

PROBE = f"""
import pickle, sys
from jianmu_like.models._messages import Message
from jianmu_like.models._types import ModelResponse, Usage

response = ModelResponse(message=Message(role="assistant", content="42"), usage=Usage(prompt_tokens=3))
recorded = pickle.dumps(response, protocol=0).replace(b"jianmu_like.models._types", b"{OLD}")
assert b"{OLD}\\n" in recorded  # as an older worker wrote it
import jianmu_like.durable._workflow  # what a worker and a client load
assert pickle.loads(recorded) == response
module = sys.modules["jianmu_like.models._types"]
assert sys.modules["{OLD}"] is module and module.__spec__.name == "jianmu_like.models._types"
print("ok")
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=PATIENCE)


def test_a_step_result_pickled_under_the_old_path_loads() -> None:
    done = _run(PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_missing_module_is_still_missing() -> None:
    code = (
        "import jianmu_like.durable._workflow, importlib\n"
        "for name in ('jianmu_like.models.nothing', 'jianmu_like.models._types.x', 'elsewhere.types'):\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError:\n"
        "        continue\n"
        "    raise SystemExit(f'{name} imported')\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr


def test_without_the_durable_package_old_paths_do_not_resolve() -> None:
    code = (
        "import importlib, jianmu_like.models\n"
        "try:\n"
        f"    importlib.import_module('{OLD}')\n"
        "except ModuleNotFoundError:\n"
        "    print('missing')\n"
    )
    done = _run(code)
    assert done.stdout.strip() == "missing", done.stderr


def test_errors_pickle_under_their_old_path_too() -> None:
    code = (
        "import pickle\n"
        "from jianmu_like.models._errors import ModelCallFailed\n"
        "import jianmu_like.durable._workflow\n"
        "error = ModelCallFailed('the server went away', attempts=[])\n"
        "old = b'jianmu_like' b'.models.errors'\n"
        "data = pickle.dumps(error, protocol=0).replace(b'jianmu_like.models._errors', old)\n"
        "again = pickle.loads(data)\n"
        "assert type(again) is ModelCallFailed and str(again) == str(error), (again, error)\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr


def test_a_class_of_a_regrouped_root_module_unpickles_under_its_old_path() -> None:
    """Issue 35 grouped the root's modules by layer (the state keys into models/, the configuration
    into _base/, ...): a step recorded before names their classes by their old root paths."""
    code = (
        # an editable install of another checkout that still has the old files (a developer's
        # main, beside this worktree) would answer the old path with its own old module
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]\n"
        "import pickle\n"
        "from jianmu_like.models._keys import StateKeys\n"
        "from jianmu_like._base.config import ConfigError\n"
        "import jianmu_like.durable._workflow\n"
        "keys = StateKeys(messages='history')\n"
        "old = b'jianmu_like' b'._keys'\n"  # in two parts: regroup.py leaves it as it is
        "data = pickle.dumps(keys, protocol=0).replace(b'jianmu_like.models._keys', old)\n"
        "assert old + b'\\n' in data\n"
        "assert pickle.loads(data) == keys\n"
        "error = ConfigError(['jianmu.yaml:1: bad'])\n"
        "old = b'jianmu_like' b'._config'\n"
        "data = pickle.dumps(error, protocol=0).replace(b'jianmu_like._base.config', old)\n"
        "assert type(pickle.loads(data)) is ConfigError\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
