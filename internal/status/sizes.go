package status

import "fmt"

// HumanBytes formats n in binary units (B, KiB, MiB, GiB, TiB, PiB), as
// an operator reads sizes: 390744439 is "372.6 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for (v >= unit || v <= -unit) && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
