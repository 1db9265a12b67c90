-- Schema: the SSH agent's per-key policy (README "SSH agent"). Every key, those stored
-- before this migration included, starts offered by the agent, signing without a question
-- for local requests and refusing requests that come through agent forwarding.
ALTER TABLE keys ADD COLUMN agent_enabled INTEGER NOT NULL DEFAULT 1
    CHECK (agent_enabled IN (0, 1));
ALTER TABLE keys ADD COLUMN agent_confirm TEXT NOT NULL DEFAULT 'never'
    CHECK (agent_confirm IN ('never', 'once_per_host', 'always'));
ALTER TABLE keys ADD COLUMN agent_forwarded TEXT NOT NULL DEFAULT 'deny'
    CHECK (agent_forwarded IN ('deny', 'confirm', 'allow'));
