"""core.cli_config: the provider directories a TF_CLI_CONFIG_FILE names, or an error, never a silent none."""

from __future__ import annotations

import json

import pytest

from core.cli_config import provider_paths

FULL = """
# an operator's config
plugin_cache_dir   = "/var/cache/terraform"
disable_checkpoint = true
credentials "app.terraform.io" {
  token = "not-a-path"
}
provider_installation {
  filesystem_mirror {
    path    = "vendor/providers"
    include = ["example.com/*/*"]
  }
  /* a second mirror,
     absolute */
  filesystem_mirror {
    path = "/opt/mirror"
  }
  dev_overrides {
    "hashicorp/null" = "/home/dev/null" // a build of their own
    "example/q\\"uote" = "./dev"
  }
  direct {
    exclude = ["example.com/*/*"]
  }
}
"""


def test_hcl() -> None:
    assert provider_paths(FULL) == (
        ("filesystem_mirror", "vendor/providers"),
        ("filesystem_mirror", "/opt/mirror"),
        ("dev_overrides hashicorp/null", "/home/dev/null"),
        ('dev_overrides example/q"uote', "./dev"),
    )


def test_json_and_object_forms() -> None:
    doc = {
        "provider_installation": {"filesystem_mirror": [{"path": "a"}, {"path": "b"}], "dev_overrides": {"x/y": "c"}}
    }
    expected = (("filesystem_mirror", "a"), ("filesystem_mirror", "b"), ("dev_overrides x/y", "c"))
    assert provider_paths(json.dumps(doc)) == expected
    assert provider_paths('provider_installation {\n  dev_overrides = { "x/y" = "c" }\n}\n') == expected[2:]


@pytest.mark.parametrize(
    "text", ["", "# nothing\n", 'plugin_cache_dir = "/x"\n', "provider_installation {\n  direct {}\n}\n"]
)
def test_no_provider_directory(text: str) -> None:
    assert provider_paths(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "provider_installation {\n  filesystem_mirror {\n    path = <<EOF\nx\nEOF\n  }\n}\n",  # heredoc: not read
        'provider_installation {\n  filesystem_mirror {\n    path = "x"\n',  # unterminated
        'provider_installation {\n  filesystem_mirror {\n    path = ["x"]\n  }\n}\n',
        'provider_installation = "x"\n',
        '{"provider_installation": ',
        "[]",
        'provider_installation { filesystem_mirror = [ { path = "x" } ] }',
    ],
)
def test_what_cannot_be_read_raises(text: str) -> None:
    with pytest.raises(ValueError):
        provider_paths(text)
