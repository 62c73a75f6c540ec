"""The flows' one door to GitHub: each module here names the requests of one kind of thing it touches
(pulls, commits, issues, comments, reactions, installations; vcs and checks for what jobs report),
so a flow says what it wants and never builds a URL or catches gidgethub's errors.

`GitHub` is the client those functions take: flows name it in their type hints without importing
gidgethub.
"""

from gidgethub.abc import GitHubAPI

GitHub = GitHubAPI
