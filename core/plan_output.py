"""The human-readable plan from `plan -no-color`'s own output (pure), so no `show -no-color` has to run.

Under TF_IN_AUTOMATION, terraform and tofu print the refresh progress, then exactly the text
`show -no-color` renders for the saved plan, then any warnings. Only the progress is dropped. Output
that does not open the way a rendered plan does is not guessed at: None, and the caller runs `show`.
"""

from __future__ import annotations

import re

_PROGRESS = re.compile(
    r"\S.*: (?:Refreshing state\.\.\.|Reading\.\.\.|Read complete after |Still reading\.\.\. |"
    r"Refreshing\.\.\.|Preparing import\.\.\.|Importing\.\.\.|Import complete|Still importing\.\.\. )"
    r"|(?:Acquiring|Releasing) state lock\. This may take a few moments\.\.\.$"
)
_OPENINGS = (
    "Terraform used the selected providers",
    "OpenTofu used the selected providers",
    "Terraform will perform the following actions",
    "OpenTofu will perform the following actions",
    "No changes.",
    "Note: Objects have changed outside of",
    "Changes to Outputs:",
)


def rendered_plan(stdout: str) -> str | None:
    """The plan as `show -no-color` prints it (warnings after it kept); None when unsure."""
    lines = stdout.splitlines(keepends=True)
    start = 0
    while start < len(lines) and (not lines[start].strip() or _PROGRESS.match(lines[start])):
        start += 1
    rest = lines[start:]
    if not rest or not rest[0].startswith(_OPENINGS) or any(line.startswith("Saved the plan to:") for line in rest):
        return None  # without TF_IN_AUTOMATION a footer follows (naming the plan file): let `show` render it
    return "\n" + "".join(rest)
