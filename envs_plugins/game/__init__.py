"""The ``game`` pack: multi-turn language games.

* :mod:`~gem_envs.game.plugin`: registers the ids.
* :mod:`~gem_envs.game.base`: what the games share (rewards, answer parsing, the turn loop).
* The games: :mod:`~gem_envs.game.guess_the_number`, :mod:`~gem_envs.game.mastermind`,
  :mod:`~gem_envs.game.minesweeper`, :mod:`~gem_envs.game.wordle`, :mod:`~gem_envs.game.hangman`,
  :mod:`~gem_envs.game.sudoku`, :mod:`~gem_envs.game.sokoban`, :mod:`~gem_envs.game.game_2048`,
  :mod:`~gem_envs.game.fifteen_puzzle`, :mod:`~gem_envs.game.tower_of_hanoi`,
  :mod:`~gem_envs.game.crosswords`, :mod:`~gem_envs.game.word_search`.
* Their makings: :mod:`~gem_envs.game.sudoku_puzzles` (Sudoku generation and solving),
  :mod:`~gem_envs.game.sokoban_levels` (solvable Sokoban levels), :mod:`~gem_envs.game.word_grid`
  (words on a letter grid), :mod:`~gem_envs.game.words` (word lists and clues, in
  :mod:`~gem_envs.game.data`).
"""
