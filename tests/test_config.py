"""`.plangate.yml` parsing: defaults, the full schema, and one precise error per mistake."""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from core.config import (
    DEFAULT_WHEN_MODIFIED,
    ConfigError,
    DestroyApprovers,
    ProjectConfig,
    RepoConfig,
    parse_config,
)

FULL = """\
version: 1
projects:                    # without this list: every changed directory holding *.tf is a project
  - name: dns
    dir: infra/dns
    workspace: default
    tool: tofu               # tofu | terraform (default: whichever is installed, tofu first)
    when_modified: ["*.tf", "*.tfvars", "../modules/**"]
    apply_on_merge: true
  - name: net
    dir: ./infra//net/
    drift:
      schedule: "0 6 * * 1"
destroy_approvers:
  permission: write          # write | maintain | admin
  users: []                  # extra logins allowed regardless of permission
  teams: []                  # org/team slugs
  allow_self_approval: false
allow_fork_prs: false
"""


def test_design_example_parses() -> None:
    cfg = parse_config(FULL)
    assert cfg == RepoConfig(
        version=1,
        projects=(
            ProjectConfig(
                name="dns",
                dir="infra/dns",
                workspace="default",
                tool="tofu",
                when_modified=("*.tf", "*.tfvars", "../modules/**"),
                apply_on_merge=True,
            ),
            ProjectConfig(name="net", dir="infra/net", drift_schedule="0 6 * * 1"),
        ),
        destroy_approvers=DestroyApprovers(),
        allow_fork_prs=False,
    )


def test_every_key_set() -> None:
    cfg = parse_config(
        textwrap.dedent(
            """\
            version: 1
            projects:
              - {name: root, dir: ., tool: terraform, workspace: prod-1, apply_on_merge: false,
                 when_modified: []}
            destroy_approvers:
              permission: admin
              users: [alice, bob-2]
              teams: [acme/platform-team, acme/sre]
              allow_self_approval: true
            allow_fork_prs: true
            apply_branch: release/v2
            mask_patterns: ['AKIA[0-9A-Z]{16}', 'password=\\S+']
            drift: {schedule: "@daily"}
            """
        )
    )
    assert cfg.projects == (
        ProjectConfig("root", ".", "prod-1", "terraform", (), apply_on_merge=False, drift_schedule=None),
    )
    assert cfg.destroy_approvers == DestroyApprovers(
        "admin", ("alice", "bob-2"), ("acme/platform-team", "acme/sre"), True
    )
    assert cfg.allow_fork_prs is True
    assert cfg.apply_branch == "release/v2"
    assert cfg.mask_patterns == ("AKIA[0-9A-Z]{16}", "password=\\S+")
    assert cfg.drift_schedule == "@daily"


@pytest.mark.parametrize("text", [None, "", "   \n\n", "# only a comment\n", "---\n", "~\n"])
def test_absent_or_empty_is_the_default(text: str | None) -> None:
    cfg = parse_config(text)
    assert cfg == RepoConfig()
    assert cfg.projects is None
    assert cfg.destroy_approvers.permission == "write"
    assert cfg.allow_fork_prs is False


def test_defaults_of_a_minimal_project() -> None:
    cfg = parse_config("version: 1\nprojects:\n  - {name: a, dir: a}\n")
    assert cfg.projects == (ProjectConfig("a", "a"),)
    assert cfg.projects[0].when_modified == DEFAULT_WHEN_MODIFIED == ("**/*.tf*", "**/.terraform.lock.hcl")
    assert cfg.projects[0].workspace == "default"
    assert cfg.projects[0].tool is None
    assert cfg.projects[0].apply_on_merge is True


def test_null_values_take_defaults() -> None:
    cfg = parse_config("version: 1\nprojects:\ndestroy_approvers:\nmask_patterns:\n")
    assert cfg == RepoConfig()


V = "version: 1\n"
P = V + "projects:\n  - name: a\n    dir: a\n"

ERRORS: list[tuple[str, str, str]] = [
    # (text, key, fragment of the problem)
    ("projects: []\n", "version", "required"),
    ("version: 2\n", "version", "expected 1"),
    ("version: '1'\n", "version", "string '1'"),
    ("version: true\n", "version", "boolean"),
    ("- a\n- b\n", "(file)", "expected a mapping"),
    ("just text\n", "(file)", "expected a mapping"),
    (V + "projets: []\n", "projets", "unknown key"),
    (V + "destroy_approver:\n  users: [x]\n", "destroy_approver", "unknown key"),
    (V + "1: x\n", "1", "unknown key"),
    (V + "destroy_approver:\n", "destroy_approver", "unknown key"),  # null: still a typo, never ignored
    (V + "projects: []\n", "projects", "empty list"),
    (V + "projects: {name: a}\n", "projects", "expected a list"),
    (V + "projects:\n  - a\n", "projects[0]", "expected a mapping"),
    (V + "projects:\n  - {dir: a}\n", "projects[0].name", "required"),
    (V + "projects:\n  - {name: a}\n", "projects[0].dir", "required"),
    (V + "projects:\n  - {name: a, dir: a, dri: b}\n", "projects[0].dri", "unknown key"),
    (V + "projects:\n  - {name: 'a b', dir: a}\n", "projects[0].name", "not a valid project name"),
    (V + "projects:\n  - {name: a/b, dir: a}\n", "projects[0].name", "not a valid project name"),
    (V + "projects:\n  - {name: 5, dir: a}\n", "projects[0].name", "expected a string, got number 5"),
    (P + "  - {name: b, dir: b}\n  - {name: a, dir: c}\n", "projects[2].name", "already used by projects[0]"),
    (V + "projects:\n  - {name: a, dir: /etc}\n", "projects[0].dir", "relative"),
    (V + "projects:\n  - {name: a, dir: ../x}\n", "projects[0].dir", "outside the repository"),
    (V + "projects:\n  - {name: a, dir: a/../../x}\n", "projects[0].dir", "outside the repository"),
    (V + "projects:\n  - {name: a, dir: '..'}\n", "projects[0].dir", "outside the repository"),
    (V + "projects:\n  - {name: a, dir: 'a\\b'}\n", "projects[0].dir", "relative"),
    (V + "projects:\n  - {name: a, dir: ''}\n", "projects[0].dir", "relative"),
    (V + "projects:\n  - {name: a, dir: [a]}\n", "projects[0].dir", "expected a string, got list"),
    (V + "projects:\n  - {name: a, dir: a, tool: terragrunt}\n", "projects[0].tool", "tofu, terraform"),
    (V + "projects:\n  - {name: a, dir: a, workspace: 'x y'}\n", "projects[0].workspace", "workspace"),
    (V + "projects:\n  - {name: a, dir: a, apply_on_merge: 'no'}\n", "projects[0].apply_on_merge", "true or false"),
    (V + "projects:\n  - {name: a, dir: a, apply_on_merge: 1}\n", "projects[0].apply_on_merge", "number 1"),
    (V + "projects:\n  - {name: a, dir: a, when_modified: '*.tf'}\n", "projects[0].when_modified", "list"),
    (P + "  - {name: b, dir: b, when_modified: ['*.tf', 3]}\n", "projects[1].when_modified[1]", "string"),
    (P + "  - {name: b, dir: b, when_modified: ['/x']}\n", "projects[1].when_modified[0]", "relative"),
    (V + "projects:\n  - {name: a, dir: a, drift: '0 * * * *'}\n", "projects[0].drift", "mapping"),
    (
        V + "projects:\n  - {name: a, dir: a, drift: {schedule: 'every day'}}\n",
        "projects[0].drift.schedule",
        'invalid cron expression "every day"',
    ),
    (
        P + "  - {name: b, dir: b, drift: {schedule: '61 * * * *'}}\n",
        "projects[1].drift.schedule",
        'invalid cron expression "61 * * * *"',
    ),
    (V + "projects:\n  - {name: a, dir: a, drift: {cron: '0 * * * *'}}\n", "projects[0].drift.cron", "unknown"),
    (V + "drift: {schedule: ''}\n", "drift.schedule", "invalid cron expression"),
    (V + "drift: {schedule: 5}\n", "drift.schedule", "cron expression string"),
    (V + "destroy_approvers: [alice]\n", "destroy_approvers", "expected a mapping"),
    (V + "destroy_approvers: {permission: read}\n", "destroy_approvers.permission", "write, maintain, admin"),
    (V + "destroy_approvers: {user: [a]}\n", "destroy_approvers.user", "unknown key"),
    (V + "destroy_approvers: {users: alice}\n", "destroy_approvers.users", "list of strings"),
    (V + "destroy_approvers: {users: ['al ice']}\n", "destroy_approvers.users[0]", "GitHub login"),
    (V + "destroy_approvers: {teams: [platform]}\n", "destroy_approvers.teams[0]", "org/team-slug"),
    (V + "destroy_approvers: {allow_self_approval: yes please}\n", "destroy_approvers.allow_self_approval", "true"),
    (V + "allow_fork_prs: 'true'\n", "allow_fork_prs", "true or false"),
    (V + "apply_branch: ''\n", "apply_branch", "not a valid branch name"),
    (V + "apply_branch: 'a b'\n", "apply_branch", "not a valid branch name"),
    (V + "apply_branch: 'a..b'\n", "apply_branch", "not a valid branch name"),
    (V + "apply_branch: -x\n", "apply_branch", "not a valid branch name"),
    (V + "apply_branch: [main]\n", "apply_branch", "a branch name"),
    (V + "mask_patterns: ['(unclosed']\n", "mask_patterns[0]", 'invalid regular expression "(unclosed"'),
    (V + "mask_patterns: 'x'\n", "mask_patterns", "list"),
    (V + "allow_fork_prs: false\nallow_fork_prs: true\n", "(file)", "line 3: duplicate key 'allow_fork_prs'"),
    (V + "projects:\n  - {name: a, dir: a, dir: b}\n", "(file)", "duplicate key 'dir'"),
]


@pytest.mark.parametrize(("text", "key", "fragment"), ERRORS)
def test_errors_name_the_key(text: str, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert info.value.key == key
    assert fragment.replace('"', "'") in info.value.problem.replace('"', "'")
    assert str(info.value) == f"`.plangate.yml`: {key}: {info.value.problem}"


def test_cron_error_message_is_exact() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(V + "projects:\n  - {name: a, dir: a, drift: {schedule: '* * *'}}\n")
    assert str(info.value) == '`.plangate.yml`: projects[0].drift.schedule: invalid cron expression "* * *"'


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("version: 1\nprojects:\n  - name: a\n   dir: b\n", 4),
        ("version: 1\nallow_fork_prs: [true\n", 3),
        ("version: 1\n\n\nkey: 'unterminated\n", 5),
        ("version: 1\n\tallow_fork_prs: true\n", 2),
    ],
)
def test_yaml_syntax_errors_give_the_line(text: str, line: int) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert info.value.key == "(file)"
    assert re.match(rf"line {line}: invalid YAML", info.value.problem), info.value.problem


def test_unsafe_tags_are_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("version: 1\nx: !!python/object/apply:os.system ['true']\n")
    assert info.value.key == "(file)"


def test_deep_nesting_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        parse_config("version: 1\nx: " + "[" * 5000 + "]" * 5000 + "\n")


def test_yaml_anchors_and_merge_keys_work() -> None:
    cfg = parse_config("version: 1\nprojects:\n  - &base {name: a, dir: a, tool: tofu}\n  - <<: *base\n    name: b\n")
    assert cfg.projects == (ProjectConfig("a", "a", tool="tofu"), ProjectConfig("b", "a", tool="tofu"))


def test_valid_cron_forms() -> None:
    for schedule in ("*/15 * * * *", "0 9 * * mon-fri", "@hourly"):
        assert parse_config(f"version: 1\ndrift: {{schedule: '{schedule}'}}\n").drift_schedule == schedule


@given(st.text(max_size=200))
def test_any_text_is_a_config_or_a_config_error(text: str) -> None:
    try:
        cfg = parse_config(text)
    except ConfigError as exc:
        assert str(exc).startswith("`.plangate.yml`: ")
    else:
        assert isinstance(cfg, RepoConfig)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=3)))


@given(
    st.dictionaries(
        st.sampled_from(["name", "dir", "workspace", "tool", "when_modified", "apply_on_merge", "drift", "x"]),
        _scalars,
    )
)
def test_random_project_mappings_never_crash(project: dict[str, object]) -> None:
    text = yaml.safe_dump({"version": 1, "projects": [project]})
    try:
        cfg = parse_config(text)
    except ConfigError as exc:
        assert exc.key.startswith("projects")
    else:
        assert cfg.projects is not None
        p = cfg.projects[0]
        assert not p.dir.startswith(("/", "..")) and set(project) <= {
            "name",
            "dir",
            "workspace",
            "tool",
            "when_modified",
            "apply_on_merge",
            "drift",
        }


def test_replan_on_base_change_defaults_on_and_can_be_turned_off() -> None:
    assert parse_config("version: 1\n").replan_on_base_change is True
    assert parse_config("version: 1\nreplan_on_base_change: false\n").replan_on_base_change is False
    with pytest.raises(ConfigError, match="replan_on_base_change"):
        parse_config("version: 1\nreplan_on_base_change: sometimes\n")


def test_trusted_bots_and_the_code_gate_switch_are_read_and_checked() -> None:
    text = """version: 1
gate_code_at_apply: false
destroy_approvers:
  trusted_bots: ["renovate[bot]"]
projects:
  - name: app
    dir: app
    gate_code_at_apply: true
"""
    config = parse_config(text)
    assert config.destroy_approvers.trusted_bots == ("renovate[bot]",)
    assert config.gates_code("app", "default", "app") and not config.gates_code("other", "default", "other")
    assert not config.gates_code("app", "default", "elsewhere")  # the name alone borrows nothing
    for bad, key in (
        ("destroy_approvers: {trusted_bots: [alice]}", "destroy_approvers.trusted_bots[0]"),
        ("gate_code_at_apply: maybe", "gate_code_at_apply"),
        ("projects: [{name: a, dir: a, gate_code_at_apply: 1}]", "projects[0].gate_code_at_apply"),
    ):
        with pytest.raises(ConfigError) as err:
            parse_config(f"version: 1\n{bad}\n")
        assert err.value.key == key


ORDERED = """version: 1
plan_dependents: true
projects:
  - {name: net, dir: net}
  - {name: cluster, dir: cluster, depends_on: [net]}
  - {name: app, dir: app, depends_on: [cluster, net]}
"""


def test_depends_on_and_plan_dependents_are_read() -> None:
    config = parse_config(ORDERED)
    assert config.plan_dependents is True
    assert [p.depends_on for p in config.projects or ()] == [(), ("net",), ("cluster", "net")]
    assert parse_config("version: 1\n").plan_dependents is False
    assert parse_config("version: 1\nprojects: [{name: a, dir: a}]\n").projects == (ProjectConfig("a", "a"),)


@pytest.mark.parametrize(
    ("projects", "key", "problem"),
    [
        ("[{name: a, dir: a, depends_on: [b]}]", "projects[0].depends_on[0]", "'b' is not a project of this file"),
        (
            "[{name: a, dir: a}, {name: b, dir: b, depends_on: [a, nope]}]",
            "projects[1].depends_on[1]",
            "'nope' is not a project of this file",
        ),
        ("[{name: a, dir: a, depends_on: [a]}]", "projects[0].depends_on[0]", "cannot depend on itself"),
        ("[{name: a, dir: a, depends_on: a}]", "projects[0].depends_on", "expected a list of strings"),
        (
            "[{name: net, dir: n, depends_on: [app]}, {name: cluster, dir: c, depends_on: [net]},"
            " {name: app, dir: a, depends_on: [cluster]}]",
            "depends_on",
            "cycle net → cluster → app → net",
        ),
        (
            "[{name: x, dir: x}, {name: b, dir: b, depends_on: [c]}, {name: c, dir: c, depends_on: [b]}]",
            "depends_on",
            "cycle b → c → b",
        ),
    ],
)
def test_depends_on_names_known_projects_without_a_cycle(projects: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(f"version: 1\nprojects: {projects}\n")
    assert err.value.key == key
    assert problem in err.value.problem
    with pytest.raises(ConfigError) as err:
        parse_config("version: 1\nplan_dependents: 2\n")
    assert err.value.key == "plan_dependents"


def test_change_rules_and_limits_parse() -> None:
    from core.config import ChangeLimits, ChangeRule

    config = parse_config(
        textwrap.dedent(
            """\
            version: 1
            destroy_rules:
              - match: ["aws_db_instance.*"]
            change_rules:
              - match: ["type:terraform_data", "module.prod.*"]
                actions: [update, create]
                approvals: 2
                approvers: {users: [alice], teams: [acme/sre]}
              - match: ["aws_iam_*"]
              - match: ["data.http.*"]
                actions: [read]
                never: true
            change_limits: {max_destroys: 0, max_projects: 3, approvals: 2, approvers: {teams: [acme/leads]}}
            """
        )
    )
    assert config.change_rules == (
        ChangeRule(("type:terraform_data", "module.prod.*"), ("update", "create"), 2, ("alice",), ("acme/sre",)),
        ChangeRule(("aws_iam_*",), ("delete", "replace")),  # by default a change rule is about destroys
        ChangeRule(("data.http.*",), ("read",), never=True),
    )
    assert config.change_limits == ChangeLimits(0, 3, 2, (), ("acme/leads",))
    assert config.rules == (*config.destroy_rules, *config.change_rules, config.change_limits)
    assert [config.change_limits.narrowed, config.change_rules[0].narrowed, config.change_rules[1].narrowed] == [
        True,
        True,
        False,
    ]
    assert parse_config("version: 1\n").change_limits is None and parse_config("version: 1\n").rules == ()
    assert parse_config("version: 1\nchange_limits: {max_projects: 1}\n").change_limits == ChangeLimits(max_projects=1)


CHANGE_ERRORS: list[tuple[str, str, str]] = [
    (V + "change_rules: {match: [x]}\n", "change_rules", "a list of rules"),
    (V + "change_rules:\n  - {actions: [update]}\n", "change_rules[0].match", "required"),
    (V + "change_rules:\n  - {match: []}\n", "change_rules[0].match", "empty list"),
    (V + "change_rules:\n  - {match: ['type:']}\n", "change_rules[0].match[0]", "type:RESOURCE_TYPE"),
    (V + "change_rules:\n  - {match: [x], actions: []}\n", "change_rules[0].actions", "empty list"),
    # left empty, `actions:` must not quietly mean the destroys: the rule was meant for something else
    (V + "change_rules:\n  - match: [x]\n    actions:\n", "change_rules[0].actions", "got nothing (null)"),
    (V + "change_rules:\n  - {match: [x], actions: update}\n", "change_rules[0].actions", "a list of delete"),
    (V + "change_rules:\n  - {match: [x], actions: [destroy]}\n", "change_rules[0].actions[0]", "one of delete"),
    (V + "change_rules:\n  - {match: [x], action: [update]}\n", "change_rules[0].action", "unknown key"),
    (V + "change_rules:\n  - {match: [x], approvals: 0}\n", "change_rules[0].approvals", "expected 1 to 10"),
    (V + "change_rules:\n  - {match: [x], approvals: 11}\n", "change_rules[0].approvals", "expected 1 to 10"),
    (V + "change_rules:\n  - {match: [x], never: true, approvals: 2}\n", "change_rules[0].never", "no approvals"),
    (
        V + "change_rules:\n  - {match: [x], approvers: {users: ['a b']}}\n",
        "change_rules[0].approvers.users[0]",
        "login",
    ),
    (V + "change_rules:\n  - {match: [x], approvers: {user: [a]}}\n", "change_rules[0].approvers.user", "unknown"),
    (V + "change_limits: [1]\n", "change_limits", "expected a mapping"),
    (V + "change_limits: {}\n", "change_limits.max_destroys", "required (with or instead of max_projects)"),
    (V + "change_limits: {approvals: 2}\n", "change_limits.max_destroys", "required"),
    (V + "change_limits: {max_destroys: -1}\n", "change_limits.max_destroys", "expected 0 or more"),
    (V + "change_limits: {max_projects: -2}\n", "change_limits.max_projects", "expected 0 or more"),
    (V + "change_limits: {max_destroys: many}\n", "change_limits.max_destroys", "a number of destroys"),
    (V + "change_limits: {max_projects: 1, approvals: 0}\n", "change_limits.approvals", "expected 1 to 10"),
    (V + "change_limits: {max_destroy: 1}\n", "change_limits.max_destroy", "unknown key"),
    (V + "change_limits: {max_destroys: 1, approvers: {teams: [x]}}\n", "change_limits.approvers.teams[0]", "org/"),
]


@pytest.mark.parametrize(("text", "key", "fragment"), CHANGE_ERRORS)
def test_change_rule_and_limit_errors_name_the_key(text: str, key: str, fragment: str) -> None:
    test_errors_name_the_key(text, key, fragment)
