"""`sqlcanary audit`: suspect golds, found on the suite's own fixtures before an agent is blamed."""
