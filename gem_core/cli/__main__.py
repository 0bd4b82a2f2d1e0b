from gem_core.cli import main

main()
