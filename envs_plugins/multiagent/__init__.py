"""The ``multiagent`` pack: turn-taking and simultaneous-move games for two or more players, and a
tool-using customer-service task with a scripted user (see docs/envs.md)."""
