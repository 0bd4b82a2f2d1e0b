"""The WikiGame pack: navigate Wikipedia from a start article to a target by following links,
read from a Kiwix ZIM file (libzim, no server) or a MediaWiki API."""
