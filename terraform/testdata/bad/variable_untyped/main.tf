variable "x" {
  description = "A value."
}
