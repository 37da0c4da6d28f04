"""The run core: one implementation of a run, behind both `Agent` and `Conversation`.

An `Agent` owns one tree; a `Conversation` borrows one of its template's pooled trees for each
run. Everything else about a run is the same for both, so it is written once, here, and the two
public classes are thin facades over a `RunCore` they hold (composition, not a subclass that
skips its parent's constructor):

- `core`: the run itself (`run`, `resume`, the drive loop), input routing and `accepts`;
- `trees`: where a run's tree comes from (`OwnedTree` for an Agent, `PooledTree` for a
  Conversation) and what a suspended run keeps of it;
- `threads`: a thread is a conversation (in-memory states per thread, or a store's versions);
- `approvals`: pending tool calls, decisions, decisions other processes stored;
- `interrupts`: follow-ups sent into a run in progress (`inject`), from any thread;
- `result`: `AgentResult` and how a run's state becomes one;
- `facade`: the public methods both classes share, forwarding to their core;
- `protocol`: `AgentLike`, what the edges (server, CLI, durable workers) rely on, satisfied by
  both classes so none of them probes with `getattr`.
- `agent`, `template`: the two facades, `Agent` (one tree) and `AgentTemplate` with its
  `Conversation`s (pooled trees); nothing else here imports them;
- `review`: an operator's review of the approvals a store holds, without running an agent
  (`jianmu-like approvals`); it imports nothing else here.
"""
