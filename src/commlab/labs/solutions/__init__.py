"""Reference solutions of the labs, one module per lab (see commlab.labs)."""
