"""Reports (Jinja): the sticky comment, the job summary, HTML, JUnit, JSON, and the console output."""
