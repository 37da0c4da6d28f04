"""Skills (SKILL.md folders): loading and its errors, confinement, the prompt budget, scripts
with bounded time and output behind the guard, SkillNode, prompt_runtime, and a whole run over
real HTTP in which the model picks a skill, reads its resource, runs its script and answers."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import textwrap
import time
from pathlib import Path

import pytest
from py_trees.common import Status

from jianmu_like import Agent, ReActState, create_react_node, human, load_agent, validate_agent_file
from jianmu_like._base.sources import SourceError
from jianmu_like.bt import ReactiveRunner
from jianmu_like.nodes import ContextBuilder, SkillNode
from jianmu_like.state import StateManager
from jianmu_like.testing import ScriptedOpenAIServer, call, reply, wait_until_async
from jianmu_like.tools import SkillSet, ToolError, ToolSet, load_skill

FOLDERS = Path(__file__).parent / "folders"
CONVERTER = FOLDERS / "unit-converter"
HAIKU = FOLDERS / "haiku-writer"


def make_skill(root: Path, name: str, front: str | None = None, body: str = "Do it.", **files: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    front = front if front is not None else f"name: {name}\ndescription: The {name} skill.\n"
    (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}\n")
    for relative, text in files.items():
        path = folder / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# ---------------------------------------------------------------- loading


def test_a_skill_folder_loads_with_its_files() -> None:
    skill = load_skill(CONVERTER)
    assert skill.name == "unit-converter"
    assert (
        skill.description.startswith("Convert lengths between kilometres") and "\n" not in skill.description
    )
    assert skill.body.startswith("# Converting units")
    assert skill.files == ("references/units.md", "scripts/convert.py")
    assert skill.scripts == ("scripts/convert.py",) and skill.tool_name == "run_unit_converter"
    assert skill.license == "MIT" and skill.metadata == {"author": "jianmu-like tests"}


@pytest.mark.parametrize(
    ("front", "body", "expected"),
    [
        (None, "no front matter", r"SKILL.md:1: a SKILL.md starts with YAML front matter"),
        ("name: x\n", "", r"SKILL.md:1: the front matter opened here is never closed"),
        ("name: bad-yaml\ndescription: [unclosed\n", "---\nbody", r"SKILL.md:\d: malformed YAML"),
        ("name: bad-yaml\n", "---\nbody", r"SKILL.md:2: description: required"),
        ("name: bad-yaml\ndescription: d\ndesciption: x\n", "---\n", r"SKILL.md:4: desciption: unknown key"),
        ("name: Bad_Yaml\ndescription: d\n", "---\n", r"SKILL.md:2: name: lowercase letters"),
        (
            "name: other\ndescription: d\n",
            "---\n",
            r"SKILL.md:2: name: 'other' must be the skill folder's name",
        ),
        (
            "name: bad-yaml\ndescription: d\nallowed-tools: Bash\n",
            "---\n",
            r"SKILL.md:4: allowed-tools: .*guard",
        ),
    ],
)
def test_a_malformed_skill_md_is_an_error_with_its_line(
    tmp_path: Path, front: str | None, body: str, expected: str
) -> None:
    folder = tmp_path / "bad-yaml"
    folder.mkdir()
    text = body if front is None else f"---\n{front}{body}\n"
    (folder / "SKILL.md").write_text(text)
    with pytest.raises(SourceError) as caught:
        load_skill(folder)
    assert any(re.search(expected, p) for p in caught.value.problems), caught.value.problems
    assert all(p.startswith(str(folder.resolve() / "SKILL.md")) for p in caught.value.problems)


def test_a_folder_without_skill_md_or_inside_an_installation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not a skill folder"):
        load_skill(tmp_path)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    inside = make_skill(venv / "lib", "tucked")
    with pytest.raises(SourceError, match="inside a Python installation"):
        load_skill(inside)
    stdlib = Path(textwrap.__file__).parent
    with pytest.raises(SourceError, match="not a skill folder"):
        load_skill(stdlib)


def test_files_are_read_only_inside_the_skill(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("sk-secret")
    folder = make_skill(tmp_path, "reader", **{"notes.md": "the notes", "big.txt": "x" * 50})
    (folder / "leak.md").symlink_to(tmp_path / "secret.txt")
    skills = SkillSet([folder], max_file_chars=20)
    assert skills.read("reader", "notes.md") == "the notes"
    assert skills.read("reader", "big.txt").startswith("x" * 20 + "\n[cut")
    assert "leak.md" not in skills.get("reader").files
    for bad, why in [
        ("../secret.txt", "give a path inside"),
        (str(tmp_path / "secret.txt"), "give a path inside"),
        ("leak.md", "leads outside"),
        ("note.md", "did you mean 'notes.md'"),
    ]:
        with pytest.raises(ToolError, match=why):
            skills.read("reader", bad)
    with pytest.raises(ToolError, match="no skill 'readr' \\(did you mean 'reader'\\?\\)"):
        skills.read("readr", "notes.md")


def test_the_catalogue_keeps_within_its_budget(tmp_path: Path) -> None:
    folders = [make_skill(tmp_path, f"skill-{i}") for i in range(30)]
    skills = SkillSet(folders, prompt_chars=400)
    prompt = skills.prompt()
    assert len(prompt.split("\nMore skills")[0]) <= 400
    described = [line for line in prompt.splitlines() if line.startswith("- skill-")]
    assert 0 < len(described) < 30
    assert prompt.splitlines()[-1].endswith(", skill-29")  # the rest are still named
    assert "skill-29" in skills.tools()[0].description  # and use_skill takes every name


# ---------------------------------------------------------------- scripts


async def test_a_script_runs_in_its_folder_with_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak-0123")
    script = "import os, pathlib; print(pathlib.Path.cwd().name, sorted(os.environ).count('OPENAI_API_KEY'))"
    folder = make_skill(tmp_path, "env-probe", **{"scripts__probe.py": script})
    skills = SkillSet([folder])
    assert await skills.run_script("env-probe", "probe.py") == "env-probe 0\n"
    with pytest.raises(ToolError, match=r"has no script 'prob\.py'"):
        await skills.run_script("env-probe", "prob.py")


async def test_a_script_is_bounded_in_time_and_output(tmp_path: Path) -> None:
    folder = make_skill(
        tmp_path,
        "unruly",
        **{
            "scripts__sleepy.py": "import time; print('started', flush=True); time.sleep(60)",
            "scripts__chatty.py": "import sys\nwhile True: sys.stdout.write('y' * 4096)",
            "scripts__failing.sh": "echo broken >&2; exit 3",
        },
    )
    skills = SkillSet([folder], script_timeout=1.0, max_output_chars=1000)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"did not finish within 1s: stopped. Output so far:\nstarted"):
        await skills.run_script("unruly", "sleepy.py")
    assert time.monotonic() - started < 10
    with pytest.raises(ToolError, match="wrote more than 1000 characters: stopped") as caught:
        await skills.run_script("unruly", "chatty.py")
    assert len(str(caught.value)) < 1200
    with pytest.raises(ToolError, match=r"failed \(exit status 3\):\nbroken"):
        await skills.run_script("unruly", "scripts/failing.sh")


async def test_a_cancelled_run_kills_its_script(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    write_pid = f"pathlib.Path({str(marker)!r}).write_text(str(os.getpid()))"
    code = f"import os, pathlib, time\n{write_pid}\ntime.sleep(60)"
    skills = SkillSet([make_skill(tmp_path, "stuck", **{"scripts__wait.py": code})])
    task = asyncio.ensure_future(skills.run_script("stuck", "wait.py"))
    await wait_until_async(lambda: marker.exists() and marker.read_text(), "the script to start")
    pid = int(marker.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, and reaped: not even a zombie


def test_a_skill_with_scripts_needs_a_name_its_tool_can_carry(tmp_path: Path) -> None:
    name = "a" * 62
    with pytest.raises(ValueError, match="60 characters at most"):
        SkillSet([make_skill(tmp_path, name, **{"scripts__x.py": "print(1)"})])


# ---------------------------------------------------------------- nodes and prompts


def test_skill_node_writes_skill_result() -> None:
    skills = SkillSet([CONVERTER, HAIKU])
    sm = StateManager(ReActState)
    node = SkillNode("Pick", skills, skill_key="task")
    sm.update({"task": "haiku-writer"})
    runner = ReactiveRunner(node, sm)
    asyncio.run(runner.run(max_ticks=2))
    result = sm.get("skill_result")
    assert result["name"] == "haiku-writer" and result["instructions"].startswith("Write exactly three lines")
    sm.update({"task": "haiku-writr"})
    node.stop(Status.INVALID)
    asyncio.run(ReactiveRunner(node, sm).run(max_ticks=2))
    assert "did you mean 'haiku-writer'" in node.feedback_message
    with pytest.raises(ToolError, match="no skill 'nope'"):
        SkillNode("Fixed", skills, skill="nope")


def test_prompt_runtime_comes_before_the_default_prompt() -> None:
    supplied: list[str | None] = ["Runtime prompt.", None]
    builder = ContextBuilder("Persona.", prompt_runtime=lambda: supplied[0])
    tools = ToolSet([])
    assert builder.build([], tools)[0].content == "Runtime prompt."
    assert builder.persona == "Runtime prompt."
    supplied[0] = None
    first = builder.build([], tools)[0].content or ""
    assert first.startswith("Persona.") and builder.persona == "Persona."


# ---------------------------------------------------------------- end to end


async def test_the_model_picks_a_skill_reads_runs_behind_the_guard_and_answers(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    for folder in (CONVERTER, HAIKU):
        shutil.copytree(folder, tmp_path / "skills" / folder.name)
    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: react\nname: Helper\nskills: [skills/unit-converter, skills/haiku-writer]\n"
        "guard:\n  require_approval:\n    effect_tags: ['skill:unit-converter']\n"
    )
    script = [
        call("use_skill", name="unit-converter"),
        call("read_skill_file", skill="unit-converter", path="references/units.md"),
        call("run_unit_converter", script="convert.py", args=["3", "km", "mi"]),
        reply("3 km is 1.864 mi."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent = load_agent(path, model_client=srv.client())
        first = await agent.run({"messages": [human("How far is 3 km in miles?")]})
        assert first.status == "suspended"
        [pending] = first.pending_approvals
        assert pending.tool == "run_unit_converter" and "skill:unit-converter" in pending.reason
        done = await agent.resume({pending.id: "approve"})
        system_prompt = srv.requests[0]["messages"][0]["content"]
        tool_names = [t["function"]["name"] for t in srv.requests[0]["tools"]]
    assert done.status == "success" and done.final_answer == "3 km is 1.864 mi."
    assert (
        "- unit-converter: Convert lengths" in system_prompt
        and "- haiku-writer: Write a haiku" in system_prompt
    )
    assert tool_names == ["use_skill", "read_skill_file", "run_unit_converter"]
    observations = [m.content or "" for m in done.state.messages if m.role == "tool"]
    assert observations[0].startswith("Skill unit-converter:\n\n# Converting units")
    assert "Scripts (run with run_unit_converter(script, args)): scripts/convert.py" in observations[0]
    assert "| mi | 1609.344 |" in observations[1]
    assert observations[2] == "1.864 mi\n"


def test_agent_file_skill_errors_name_their_lines(tmp_path: Path) -> None:
    sub = tmp_path / "agents"
    make_skill(sub, "broken", front="name: broken\n")
    outside = make_skill(tmp_path / "elsewhere", "far")
    path = sub / "agent.yaml"
    path.write_text(f"kind: react\nskills:\n  - broken\n  - {outside}\n  - missing\n")
    with pytest.raises(SourceError) as caught:
        validate_agent_file(path)
    problems = caught.value.problems
    broken = (sub / "broken" / "SKILL.md").resolve()
    assert any(p.startswith(f"{broken}:2: description: required") for p in problems), problems
    assert any(f"{path}:4: skills[1]: " in p and "must lie under" in p for p in problems)
    assert any(f"{path}:5: skills[2]: " in p and "no such skill folder" in p for p in problems)
    path.write_text("kind: supervisor\nskills: [x]\n")
    with pytest.raises(SourceError, match="skills"):
        validate_agent_file(path)


async def test_python_skills_on_create_react_node() -> None:
    script = [call("use_skill", name="haiku-writer"), reply("Quiet pond\n...")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), skills=[HAIKU]))
        result = await agent.run({"messages": [human("A haiku about frogs")]})
        sent = srv.requests[1]["messages"]
    assert result.final_answer == "Quiet pond\n..."
    assert next(t for t in sent if t["role"] == "tool")["content"].startswith("Skill haiku-writer:")
