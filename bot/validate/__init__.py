"""`sqlcanary validate`: a config, its suite, its KB and its agent spec checked without a database or an agent,
every problem at once (bot.validate.pipeline)."""
