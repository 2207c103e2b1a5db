"""`python -m gnn_codegen` is the same as the `gnn-codegen` command."""

from gnn_codegen.cli import console_main

console_main()
