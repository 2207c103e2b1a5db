"""Stage 7, splice and format. Takes the user's file and the rendered code; gives one
black-formatted module (libcst keeps the user's class as written) and what of the user's file
it does not do. May import load and render's runtime imports."""
