"""`python -m gnn_codegen` is the same as the `gnn-codegen` command."""

from gnn_codegen.cli import main

raise SystemExit(main())
