module mixp.dev/mixp

go 1.19
