from boundary.cli import main

raise SystemExit(main())
