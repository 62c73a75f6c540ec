"""The plan's text from `plan -no-color` output (core.plan_output); real outputs are checked against
`show -no-color` in test_plan_terraform.py."""

from __future__ import annotations

from core.plan_output import rendered_plan

BODY = "Terraform will perform the following actions:\n\n  # terraform_data.a will be created\n"


def test_refresh_progress_is_dropped_and_the_rendering_kept_whole() -> None:
    out = (
        "data.x.y: Reading...\nterraform_data.a: Refreshing state... [id=1]\n"
        "data.x.y: Read complete after 0s [id=2]\n\n" + BODY + "\nWarning: something\n"
    )
    assert rendered_plan(out) == "\n" + BODY + "\nWarning: something\n"


def test_opentofu_and_no_changes_open_a_rendering_too() -> None:
    assert rendered_plan("\nOpenTofu used the selected providers to\n") == "\nOpenTofu used the selected providers to\n"
    assert (
        rendered_plan("\nNo changes. Your infrastructure matches.\n") == "\nNo changes. Your infrastructure matches.\n"
    )


def test_output_that_does_not_open_like_a_plan_is_not_guessed_at() -> None:
    assert rendered_plan("") is None
    assert rendered_plan("terraform_data.a: Refreshing state... [id=1]\n") is None
    assert rendered_plan("Acquiring state lock. This may take a few moments...\n\n" + BODY) == "\n" + BODY
    assert rendered_plan("Acquiring state lock, or not\n\n" + BODY) is None
    assert rendered_plan("Error: something\n\n" + BODY) is None


def test_a_saved_plan_footer_means_the_text_is_not_shows() -> None:
    assert rendered_plan("\n" + BODY + "\n───\n\nSaved the plan to: /tmp/p.tfplan\n") is None
