"""SkillNode: the tree, not the model, picks a skill — the primary spec's skill runtime node.

A ReAct agent picks skills itself (`use_skill`, see `tools._skills`). When the tree's author
knows which skill a step needs (or a state key names it, written by an earlier node), a
`SkillNode` activates it: it writes `skill_result` (`StateKeys.skill_result`, an
`Ephemeral(scope="run")` key of `ReActState`, as the spec's state contract has it) with the
skill's name, description, instructions and files, for skill-aware nodes after it — a
`MessageNode` template (`{skill_result[instructions]}`), a ReAct agent's input, your own node.
Scripts are not run here: they run only as tool calls, behind the guard.
"""

from __future__ import annotations

from py_trees.common import Status

from ..bt._node import Node
from ..models._keys import StateKeys
from ..state._contract import StateContract, declare
from ..tools._errors import ToolError
from ..tools._skills import SkillSet, describe


class SkillNode(Node):
    """Writes the skill `skill` (or the one named by the state key `skill_key`) to
    `skill_result` in `namespace`: `{"name", "description", "instructions", "files"}`. FAILURE,
    with the reason as feedback, when no skill is named or the name is unknown."""

    def __init__(
        self,
        name: str,
        skills: SkillSet,
        *,
        skill: str | None = None,
        skill_key: str | None = None,
        namespace: str | None = None,
        keys: StateKeys | None = None,
    ) -> None:
        super().__init__(name)
        if (skill is None) == (skill_key is None):
            raise ValueError("SkillNode needs one of skill= (a fixed skill) or skill_key= (a state key)")
        if skill is not None:
            skills.get(skill)  # an unknown skill is the tree's error, found when it is built
        self.skills = skills
        self.skill = skill
        self.skill_key = skill_key
        self.namespace = namespace
        self.keys = keys or StateKeys()
        owner = f"skill node {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
        reads = (skill_key,) if skill_key is not None else ()
        declare(self, StateContract(owner, (self.keys.skill_result,), namespace, reads=reads))

    def update(self) -> Status:
        sm, ns = self.state_manager, self.namespace
        chosen = self.skill if self.skill_key is None else sm.get(self.skill_key, ns)
        if not isinstance(chosen, str) or not chosen:
            self.feedback_message = f"no skill named in {self.skill_key!r}"
            return Status.FAILURE
        try:
            skill = self.skills.get(chosen)
        except ToolError as exc:
            self.feedback_message = str(exc)
            return Status.FAILURE
        result = {**describe(skill), "instructions": skill.body}
        sm.update({self.keys.skill_result: result}, ns)
        return Status.SUCCESS
