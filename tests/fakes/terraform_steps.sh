#!/bin/sh
# Fake terraform for the scale benchmark: each step sleeps $FAKE_TF_STEP_SECONDS (default 1) and does
# what real terraform does for a project that removes `terraform_data.old` and adds `terraform_data.new`:
# init makes .terraform, plan (which needs it) writes its -out file and prints the plan as terraform
# 1.11 does under TF_IN_AUTOMATION (exit 2 with -detailed-exitcode), show -json prints that file.
# The JSON is a real `show -json` of that change; the plan file holds it, so `show` reads what `plan` wrote.
set -eu
rendered() {
    cat <<'TEXT'
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create
  - destroy

Terraform will perform the following actions:

  # terraform_data.new will be created
  + resource "terraform_data" "new" {
      + id     = (known after apply)
      + input  = "x"
      + output = (known after apply)
    }

  # terraform_data.old will be destroyed
  # (because terraform_data.old is not in configuration)
  - resource "terraform_data" "old" {
      - id     = "1a8dbf09-be04-8a33-6ae9-13b061a434ab" -> null
      - input  = "x" -> null
      - output = "x" -> null
    }

Plan: 1 to add, 0 to change, 1 to destroy.
TEXT
}

step="${1:-}"
[ $# -gt 0 ] && shift
sleep "${FAKE_TF_STEP_SECONDS:-1}"
case "$step" in
init)
    mkdir -p .terraform
    echo '{"version":3,"backend":{"type":"local"}}' > .terraform/terraform.tfstate
    printf '\nInitializing the backend...\n\nInitializing provider plugins...\n'
    printf -- '- terraform.io/builtin/terraform is built in to Terraform\n\n'
    printf 'Terraform has been successfully initialized!\n'
    ;;
plan)
    if [ ! -f .terraform/terraform.tfstate ]; then
        echo 'Error: Backend initialization required, please run "terraform init"' >&2
        exit 1
    fi
    out="" changes=0
    for arg in "$@"; do
        case "$arg" in
        -out=*) out="${arg#-out=}" ;;
        -detailed-exitcode) changes=2 ;;
        esac
    done
    [ -n "$out" ] || { echo "Error: this fake needs -out=FILE" >&2; exit 1; }
    cat > "$out" <<'JSON'
{"format_version":"1.2","terraform_version":"1.11.4","planned_values":{"root_module":{"resources":[{"address":"terraform_data.new","mode":"managed","type":"terraform_data","name":"new","provider_name":"terraform.io/builtin/terraform","schema_version":0,"values":{"input":"x","triggers_replace":null},"sensitive_values":{}}]}},"resource_changes":[{"address":"terraform_data.new","mode":"managed","type":"terraform_data","name":"new","provider_name":"terraform.io/builtin/terraform","change":{"actions":["create"],"before":null,"after":{"input":"x","triggers_replace":null},"after_unknown":{"id":true,"output":true},"before_sensitive":false,"after_sensitive":{}}},{"address":"terraform_data.old","mode":"managed","type":"terraform_data","name":"old","provider_name":"terraform.io/builtin/terraform","change":{"actions":["delete"],"before":{"id":"1a8dbf09-be04-8a33-6ae9-13b061a434ab","input":"x","output":"x","triggers_replace":null},"after":null,"after_unknown":{},"before_sensitive":{},"after_sensitive":false},"action_reason":"delete_because_no_resource_config"}],"prior_state":{"format_version":"1.0","terraform_version":"1.11.4","values":{"root_module":{"resources":[{"address":"terraform_data.old","mode":"managed","type":"terraform_data","name":"old","provider_name":"terraform.io/builtin/terraform","schema_version":0,"values":{"id":"1a8dbf09-be04-8a33-6ae9-13b061a434ab","input":"x","output":"x","triggers_replace":null},"sensitive_values":{}}]}}},"configuration":{"provider_config":{"terraform":{"name":"terraform","full_name":"terraform.io/builtin/terraform"}},"root_module":{"resources":[{"address":"terraform_data.new","mode":"managed","type":"terraform_data","name":"new","provider_config_key":"terraform","expressions":{"input":{"constant_value":"x"}},"schema_version":0}]}},"timestamp":"2026-12-03T19:22:03Z","applyable":true,"complete":true,"errored":false}
JSON
    echo 'terraform_data.old: Refreshing state... [id=1a8dbf09-be04-8a33-6ae9-13b061a434ab]'
    echo
    rendered
    exit "$changes"
    ;;
show)
    json=no file=""
    for arg in "$@"; do
        case "$arg" in
        -json) json=yes ;;
        -*) ;;
        *) file="$arg" ;;
        esac
    done
    [ -f "$file" ] || { echo "Error: Failed to read the given file as a state or plan file" >&2; exit 1; }
    if [ "$json" = yes ]; then
        cat "$file"
    else
        echo
        rendered
    fi
    ;;
*)
    echo "this fake terraform knows init, plan and show, not '$step'" >&2
    exit 1
    ;;
esac
