package manifest

const childEnv = "SEDIMENT_MANIFEST_CHILD"

func runChild() int { return 0 }
