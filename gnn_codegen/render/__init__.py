"""Stage 6, render. Takes the Plan; gives the `inference` method, the layer functions and
the runtime section, through the Jinja templates in templates/ (templating.py finds them);
hetero*.py render a HeteroPlan. May import every earlier stage, never write or verify."""
