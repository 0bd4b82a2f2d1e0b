"""The ``code`` pack: write a program that passes hidden tests, run in the sandbox."""
