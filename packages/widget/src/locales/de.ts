import type { Messages } from "../messages.js"

/** German. */
const messages: Messages = {
  tabPost: "Feedback geben",
  tabUpdates: "Neuigkeiten",
  tabs: "Feedback",
  formTitle: "Sagen Sie uns, was Sie brauchen",
  board: "Board",
  loadingBoards: "Boards werden geladen…",
  noBoards: "Es gibt noch kein öffentliches Board.",
  boardsFailed: "Die Boards konnten nicht geladen werden.",
  retry: "Erneut versuchen",
  title: "Titel",
  details: "Details (optional)",
  submit: "Feedback senden",
  sending: "Wird gesendet…",
  similar: { one: "Es gibt bereits einen ähnlichen Beitrag", other: "Es gibt bereits {count} ähnliche Beiträge" },
  newTab: "(öffnet sich in einem neuen Tab)",
  thanks: "Vielen Dank! Ihr Feedback „{title}“ wurde veröffentlicht.",
  sendMore: "Weiteres Feedback senden",
  pickBoard: "Wählen Sie ein Board aus.",
  titleRequired: "Bitte geben Sie Ihrem Feedback einen Titel.",
  fieldInvalid: "Bitte überprüfen Sie dieses Feld.",
  loading: "Wird geladen…",
  nothingNew: "Noch keine Neuigkeiten.",
  updatesFailed: "Die Neuigkeiten konnten nicht geladen werden.",
  unreachable: "Der Feedback-Dienst ist von dieser Seite aus nicht erreichbar.",
  busy: { one: "Der Feedback-Dienst ist gerade ausgelastet. Bitte versuchen Sie es in {seconds} Sekunde erneut.", other: "Der Feedback-Dienst ist gerade ausgelastet. Bitte versuchen Sie es in {seconds} Sekunden erneut." },
  unauthorized: "Ihre Anmeldung konnte nicht überprüft werden. Laden Sie die Seite neu und versuchen Sie es erneut.",
  notFound: "Dieses Board gibt es nicht mehr. Laden Sie die Seite neu und wählen Sie ein anderes aus.",
  checkForm: "Bitte überprüfen Sie das Formular.",
  failed: "Bei uns ist etwas schiefgelaufen. Bitte versuchen Sie es erneut."
}
export default messages
