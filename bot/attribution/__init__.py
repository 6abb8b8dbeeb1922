"""Which of a pull request's KB changes broke each regressed case: delta debugging over the diff's line changes
on a private copy of the head's tree (`find_causes`, bot.attribution.causal), and the partial revert verified on
the whole suite. The check uses it; the repair loop is above it and never needed by it."""
