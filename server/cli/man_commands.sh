#!/bin/sh
# man_commands.sh — a help2man include file with every subcommand's help: a COMMANDS section with
# `edged CMD --help` for each command `edged --help` lists, and for each mode a command's help
# names as `edged CMD --MODE --help` (bench --codec). The Makefile's man page rule runs it.
# Usage: sh server/cli/man_commands.sh BUILD/edged > BUILD/edged.h2m
set -eu
bin=$1

# roff, kept as printed: a backslash is \e, a hyphen \- (options copy as typed), and a line that
# starts with . or ' is text, not a request.
roff() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^[.']/\\\\\&&/"; }

echo "[COMMANDS]"
for cmd in $("$bin" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'); do
    for mode in "" $("$bin" "$cmd" --help | sed -n "s/.*edged $cmd \(--[a-z-]*\) --help.*/\1/p"); do
        echo ".SS \"edged $cmd${mode:+ $(echo "$mode" | roff)}\""
        echo ".nf"
        "$bin" "$cmd" ${mode:+"$mode"} --help | roff
        echo ".fi"
    done
done
