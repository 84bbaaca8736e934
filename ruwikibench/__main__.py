from ruwikibench.cli import main

main()
