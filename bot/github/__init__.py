"""The only package that knows GitHub: PyGithub client, sticky comment, check run, workflow files, event payload."""
