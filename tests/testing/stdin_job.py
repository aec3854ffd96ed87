"""A job that reads standard input into out.ndjson (payloads) and errors.ndjson (the error
output): the stdin source's tests and the processors tested through it."""


def stdin_job(tmp_path, source_extra="", more_sources="", processors="", rest=""):
    """Writes the job's config.yaml into `tmp_path` and returns its path. `processors` is the
    YAML of the processors list's items."""
    path = tmp_path / "config.yaml"
    processors_section = f"processors:\n{processors}" if processors else ""
    path.write_text(f"""
sources:
  - type: stdin
{source_extra}{more_sources}
{processors_section}
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
    encoding: payload
  - type: file
    name: errors
    path: {tmp_path}/errors.ndjson
    inputs: [error]
queue:
  data_dir: {tmp_path}/data
{rest}""")
    return path
