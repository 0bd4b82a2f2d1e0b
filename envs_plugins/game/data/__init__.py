"""Data files of the game pack (word lists and crossword clues); see NOTICE.txt."""
