import type { Messages } from "../messages.js"

/** Dutch. */
const messages: Messages = {
  tabPost: "Feedback geven",
  tabUpdates: "Wat is er nieuw",
  tabs: "Feedback",
  formTitle: "Vertel ons wat je nodig hebt",
  board: "Bord",
  loadingBoards: "Borden worden geladen…",
  noBoards: "Er is nog geen openbaar bord.",
  boardsFailed: "De borden konden niet worden geladen.",
  retry: "Opnieuw proberen",
  title: "Titel",
  details: "Details (optioneel)",
  submit: "Feedback versturen",
  sending: "Versturen…",
  similar: { one: "Er bestaat al een vergelijkbaar bericht", other: "Er bestaan al {count} vergelijkbare berichten" },
  newTab: "(opent in een nieuw tabblad)",
  thanks: "Bedankt! Je feedback ‘{title}’ is geplaatst.",
  sendMore: "Meer feedback versturen",
  pickBoard: "Kies een bord.",
  titleRequired: "Geef je feedback een titel.",
  fieldInvalid: "Controleer dit veld.",
  loading: "Laden…",
  nothingNew: "Nog niets nieuws.",
  updatesFailed: "Wat er nieuw is, kon niet worden geladen.",
  unreachable: "De feedbackservice is vanaf deze pagina niet bereikbaar.",
  busy: { one: "De feedbackservice is momenteel erg druk. Probeer het over {seconds} seconde opnieuw.", other: "De feedbackservice is momenteel erg druk. Probeer het over {seconds} seconden opnieuw." },
  unauthorized: "Je aanmelding kon niet worden geverifieerd. Laad de pagina opnieuw en probeer het nog eens.",
  notFound: "Dit bord bestaat niet meer. Laad de pagina opnieuw en kies een ander bord.",
  checkForm: "Controleer het formulier.",
  failed: "Er ging bij ons iets mis. Probeer het opnieuw."
}
export default messages
