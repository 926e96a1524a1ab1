#!/usr/bin/env python3
"""prometheusrule.py — writes the PrometheusRule of the kustomize component
docker/k8s/components/alerts from docker/monitoring/edged-rules.yaml, the one source of edged's
alert rules: the same groups as the PrometheusRule's spec. Run it after editing the rules file;
--check only says whether the PrometheusRule is up to date, the same objects once read
(exit 1 if not), as tests/system/test_monitoring.py does. Needs PyYAML (Debian: python3-yaml)."""
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "edged-rules.yaml")
TARGET = os.path.join(HERE, "..", "k8s", "components", "alerts", "prometheusrule.yaml")
HEADER = """\
# prometheusrule.yaml — edged's alert rules for the Prometheus Operator (kind PrometheusRule).
# Generated from docker/monitoring/edged-rules.yaml by docker/monitoring/prometheusrule.py: edit
# that file and run the script, never this one. kube-prometheus-stack selects PrometheusRules by
# its release label unless installed with
# prometheus.prometheusSpec.ruleSelectorNilUsesHelmValues=false; otherwise add
# `release: <your release name>` to the labels below.
"""


class Dumper(yaml.SafeDumper):
    """Multi-line strings (the PromQL expressions) as literal blocks, as in the source."""


def _str(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


Dumper.add_representer(str, _str)


def render():
    """The text of the PrometheusRule for the rules in SOURCE."""
    with open(SOURCE, encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    doc = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
           "metadata": {"name": "edged", "labels": {"app.kubernetes.io/name": "edged"}},
           "spec": rules}
    return HEADER + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=200, allow_unicode=True)


def main(argv):
    text = render()
    if argv[1:] == ["--check"]:
        with open(TARGET, encoding="utf-8") as f:
            same = yaml.safe_load(f) == yaml.safe_load(text)
        if not same:
            print("%s is out of date: run %s" % (os.path.relpath(TARGET), os.path.relpath(__file__)), file=sys.stderr)
        return 0 if same else 1
    if argv[1:]:
        print("usage: %s [--check]" % argv[0], file=sys.stderr)
        return 2
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
