variable "allowed" {
  description = "Who may connect."
  type        = list(string)
  default     = ["10.0.0.0/8", "0.0.0.0/0"]
}
