"""Reading what a file sink wrote while it may still be writing."""
import json


def complete_lines(path):
    """The JSON objects of `path`'s complete lines (a line being written is left for later);
    [] while the file does not exist."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]
