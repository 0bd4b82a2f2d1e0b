"""The ``math`` pack: math problems from Hugging Face datasets, the math evaluation sets, and
offline generated problems, graded by math-verify under a time limit."""
