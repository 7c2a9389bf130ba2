variable "x" {
  type = string
}

variable "y" {
  type        = string
  description = " "
}
